"""The Latin words a Chinese page or picture may hold: names of things that Chinese ViT notes keep in English (tokens,
modules, methods, families, file formats), the cited authors, symbols of formulas, and the commands and keys a
student types. Shared by the catalogue's test (tests/pictures/test_i18n.py) and the browser's (tests/browser)."""
from __future__ import annotations

import re

NAMES = {
    # tokens, modules and operations
    "CLS", "DIST", "REG", "ViT", "MLP", "L2", "LN", "softmax", "logit", "logits", "Transformer", "MAP", "LayerNorm",
    "Linear", "Conv2d", "qkv", "proj", "GELU", "QuickGELU", "SwiGLU", "SiLU", "LayerScale", "ln_pre", "tanh", "Pre",
    "W_g", "W_x", "RGB", "x_class", "E_pos", "z_L", "sign", "ln", "sin", "cos",
    # model families and explanation methods (each with its Chinese description beside it)
    "DINO", "BERT", "BEiT", "SigLIP", "CLIP", "EVA", "VideoMAE", "TimeSformer", "ViViT", "JEPA", "GAE", "AttnLRP", "CP",
    "LRP", "Grad", "CAM", "vit", "explain",
    # cited authors and protocols
    "Abnar", "Zuidema", "Darcet", "Petsiuk", "Chefer", "Adebayo", "ROAD", "Rong", "nostalgebraist", "Elhage", "Meng",
    "Heimersheim", "Nanda", "AUC",
    # units, keys, commands and their options, configuration names
    "CPU", "MB", "GB", "float16", "float32", "bfloat16", "Ctrl", "python", "app", "py", "share", "weights", "class",
    "pos_embed_kind", "none", "max", "memory",
    # what the loader assumed: libraries, data sets, activations, and the code that gives the real value
    "Hugging", "Face", "Hub", "OpenAI", "LAION", "DataComp", "ImageNet", "JSON", "timm", "open_clip", "load",
    "num_heads", "mlp_act", "img_size", "gelu", "quick_gelu", "gelu_tanh", "clip_quickgelu", "preprocess", "labels",
    "preprocessor_config", "json",
    # the 2026 families (rotary, relative-position MLP, parallel blocks, NaFlex) and what their loading assumed
    "DINOv2", "DINOv3", "RoPE", "NaFlex", "NaFlexViT", "naflexvit", "siglip", "Siglip2VisionModel", "VisionTransformer", "transformers", "torchvision",
    "architecture", "config", "rpn", "res_post_norm", "pos_embed_interp", "pos_embed_ar_preserving", "bicubic",
    "bilinear", "false", "true",
    # the keys and values a checkpoint's config or a load takes, and timm's names of the families they describe
    "eps", "layer_norm_eps", "cls", "global_pool", "readout", "vit_base_patch16_rpn_224", "beit3",
    # dense features (DINOv2's own key for them)
    "x_norm_patchtokens",
    # Swin Transformers, and the page of the docs that defines their maps (docs/swin.md)
    "Swin", "docs", "md",
    # concepts: sparse autoencoders, the divergence they are measured by, the command that installs their training
    "SAE", "KL", "pip", "install", "attention", "explorer", "concepts", "overcomplete",
    # the SAEs' kinds and the tools that save them, and the commands that train one and serve it (python -m
    # viz.concepts train FOLDER --layer L --latents M --out DIR; python app.py --sae DIR)
    "topk", "batchtopk", "relu", "jumprelu", "lens", "Prisma", "viz", "train", "FOLDER", "DIR", "layer", "latents",
    "out", "sae",
}
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*[A-Za-z0-9]")


def english_words(text: str) -> set[str]:
    """The Latin words of ``text``: two characters or more, a letter first, digits and underscores inside (L2,
    Conv2d, float16, x_class)."""
    return set(WORD.findall(text))
