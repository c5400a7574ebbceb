"""Concepts: sparse autoencoders (SAEs) on one layer's patch tokens, trained on a folder of photos and browsed beside
the maps. Each latent of an SAE is a direction in the layer's token space that few patches use; the view shows where
a photo's strongest latents fire, the patches of the folder where each fires most, and what the model answers when
one is switched off.

- ``activations``: the tokens at a hook point (``vit.inside.hooks``) over a folder, streamed to safetensors shards
  with an index (resumable, split across ``torchrun`` processes as ``python -m viz FOLDER`` splits its images);
- ``train``: overcomplete's SAE and training loop on those tokens (the optional ``[concepts]`` extra);
- ``sae``: an SAE as it is used (``SparseAutoencoder``: encode, decode, a latent's contribution, edits; sae.json and
  sae.safetensors), plain torch;
- ``published``: sae-lens' and ViT-Prisma's saved SAEs opened as ``SparseAutoencoder`` where their hook point maps to
  ours (``open_sae`` reads any of the three formats);
- ``metrics``: metrics.json (FVU, L0, dead latents, PCA's FVU at the same L0, the spliced model's KL and top-1
  agreement); ``top_patches``: every latent's strongest patches over the folder (top_patches.npz);
- ``view``: what the Concepts tab and ``python -m viz IMAGE --concepts DIR`` show (Gradio-free), drawn by
  ``pictures``, in the words of ``texts``;
- ``cli``: ``python -m viz.concepts train FOLDER …``.
"""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
