"""The Latin words a Chinese page or picture may hold: names of things that Chinese ViT notes keep in English (tokens,
modules, methods, families, file formats), the cited authors, symbols of formulas, and the commands and keys a
student types. Shared by the catalogue's test (tests/pictures/test_i18n.py) and the browser's (tests/browser)."""
from __future__ import annotations

import re

NAMES = {
    # tokens, modules and operations
    "CLS", "DIST", "REG", "ViT", "MLP", "L2", "LN", "softmax", "logit", "logits", "Transformer", "MAP", "LayerNorm",
    "Linear", "Conv2d", "Conv2", "qkv", "proj", "GELU", "QuickGELU", "SwiGLU", "SiLU", "LayerScale", "ln_pre", "tanh", "Pre",
    "W_g", "W_x", "RGB", "x_class", "E_pos", "z_L",
    # model families and explanation methods (each with its Chinese description beside it)
    "DINO", "BERT", "BEiT", "SigLIP", "CLIP", "EVA", "GAE", "AttnLRP", "CP", "LRP", "Grad", "CAM", "vit", "explain",
    # cited authors and protocols
    "Abnar", "Zuidema", "Darcet", "Petsiuk", "Chefer", "Adebayo", "ROAD", "Rong", "nostalgebraist", "Elhage", "Meng",
    "Heimersheim", "Nanda", "AUC",
    # units, keys, commands and their options, configuration names
    "CPU", "MB", "Ctrl", "python", "app", "py", "share", "weights", "class", "pos_embed_kind", "none",
}
WORD = re.compile(r"[A-Za-z][A-Za-z_]*[A-Za-z0-9]|[A-Za-z]{2,}")


def english_words(text: str) -> set[str]:
    """The Latin words of ``text`` (two letters or more, or a name with digits or underscores)."""
    return set(WORD.findall(text))
