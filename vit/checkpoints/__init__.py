"""Checkpoints: reading files safely, recognising their format, renaming their tensors and building our model.

- ``files``: the three safe readers (safetensors, weights-only torch, numpy without pickle) and our own format;
- ``formats``: one key-swap filter per checkpoint format (timm, torchvision, DINO, Hugging Face, Google, OpenAI /
  open_clip CLIP, open_clip's timm towers), format detection, strict loading;
- ``infer``: the ViTConfig read off tensor shapes; ``timm_names``: what a timm architecture's name says;
- ``assumptions``: what the loader assumed rather than read, one sentence each (``LoadedModel.assumptions``);
- ``huggingface``: Hub folders: transformers' ``save_pretrained`` folders (ViT, DeiT, BEiT, data2vec-vision, DINOv2,
  MAE, MSN, CLIP, SigLIP), timm's and open_clip's (config, weights, preprocessing, a CLIP tokenizer's files);
- ``hub``: models by Hugging Face Hub name, through huggingface_hub and its cache (configuration and weights only);
- ``pipelines``: each source's own preprocessing (Hugging Face image processors, timm's pretrained_cfg, open_clip's
  image_transform, torchvision's weights transforms) as one ``vit.Preprocess``;
- ``registry``: checkpoints we know (sha256 / file name) with their preprocessing;
- ``load``: ``vit.load(source)``, where weights come from.
"""
