"""Checkpoints: reading files safely, recognising their format, renaming their tensors and building our model.

- ``files``: the three safe readers (safetensors, weights-only torch, numpy without pickle) and our own format;
- ``formats``: one key-swap filter per checkpoint format, format detection, strict loading;
- ``infer``: the ViTConfig read off tensor shapes;
- ``huggingface``: Hugging Face ``save_pretrained`` folders (config, weights, image processor);
- ``registry``: checkpoints we know (sha256 / file name) with their preprocessing;
- ``load``: ``vit.load(source)``, where weights come from.
"""
