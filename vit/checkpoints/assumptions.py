"""What the loader assumed rather than read: one sentence per fact a checkpoint does not hold.

A state dict holds tensors; several facts that change the model's output are not among them: the number of heads
(qkv is (3D, D) for any H), the MLP activation of a CLIP or SigLIP tower (GELU, QuickGELU and tanh GELU have the same
tensors), the native grid of the position table, the preprocessing and the class names. Metadata says them where
there is some (a Hugging Face, timm or open_clip folder's configs, a sidecar JSON, the registry of known files);
otherwise the loader follows the family's convention and says so here, in ``LoadedModel.assumptions``, with the way
to give the real value. Each ``Assumption`` is that English sentence (a ``str``) with the key and fields ``viz.i18n``
fills in another language.
"""
from __future__ import annotations

from ..model import ViTConfig
from ..preprocess import IMAGENET_MEAN, IMAGENET_STD, INCEPTION_MEAN, INCEPTION_STD, OPENAI_CLIP_MEAN, \
    OPENAI_CLIP_STD, Preprocess
from .infer import HEAD_DIM, STANDARD_HEADS
from .pipelines import huggingface_preprocess, open_clip_preprocess, timm_preprocess
from .swin_formats import SWIN_FORMATS, swin_default_preprocess


def _how(field: str, value: str) -> str:
    """How to give a config field, as a template fragment (its braces escaped for the sentence's own fields)."""
    text = (f'{field}={value} (to vit.load, or as {{"config": {{"{field}": {value}}}}} in a sidecar JSON beside '
            f'the file)')
    return text.replace("{", "{{").replace("}", "}}")


ASSUMED: dict[str, str] = {  # Assumption.key -> the sentence; viz/i18n/page.py holds each one's Chinese
    "heads_known": "The number of attention heads is not in the file: {heads} assumed, as the published ViTs "
                   "{width} wide with this layout have; if it has another number N, give "
                   + _how("num_heads", "N") + ".",
    "heads_default": "The number of attention heads is not in the file: {heads} assumed ({head_dim} dimensions per "
                     "head, as most ViTs); if it has another number N, give " + _how("num_heads", "N") + ".",
    "act_openai_clip": "The MLP activation is not in the file: QuickGELU assumed, as OpenAI's CLIP has; an open_clip "
                       "model trained with exact GELU (most LAION and DataComp models) needs "
                       + _how("mlp_act", '"gelu"') + ".",
    "act_clip": "The MLP activation is not in the file: exact GELU assumed, as timm's CLIP towers have; timm's "
                "*_clip_quickgelu_* models need " + _how("mlp_act", '"quick_gelu"') + ".",
    "act_siglip": "The MLP activation is not in the file: exact GELU assumed, as timm's SigLIP towers have; the "
                  "SigLIP 2 towers with tanh GELU need " + _how("mlp_act", '"gelu_tanh"') + ".",
    "rope_grid": "The rotary embedding is not in the file: EVA-02's, its angles scaled to the {grid} grid timm's "
                 "EVA-02 models were trained on, assumed.",
    "timm_table": "timm is not installed: what timm's {name} is (its heads, norms, rotation and readout) was read "
                  "from this explorer's own table of timm's architectures, not from timm; with timm installed "
                  "(pip install timm) it is read from timm itself and the load is checked against timm's model.",
    "sam_eps": "The blocks' LayerNorm eps is not in the file: {eps} assumed, as {source} has; another eps E needs "
               + _how("layer_norm_eps", "E") + ".",
    "readout_timm": "Which tokens the head reads is not in the file: {description} assumed (readout \"{readout}\"), "
                    "the default of timm's {family} models (global_pool='{pool}'); a model trained reading another, "
                    "such as {family}'s own CLS feature, needs " + _how("readout", '"cls"') + ".",
    "rotary_family": "The rotary position embedding is not in the file: {family}'s assumed, as its tensors are "
                     "{family}'s; if it is another model, give its timm name as \"architecture\" in a sidecar JSON "
                     "beside the file.",
    "img_size": "The input size is not in the file: {size} assumed from its {count} position embeddings as a square "
                "{grid} grid; if it was trained on another grid, give " + _how("img_size", "[H, W]") + ".",
    "swin_img_size": "The input size is not in the file: {size} assumed, at which the last stage is exactly one "
                     "{window}×{window} window; if it was trained at another size, give " + _how("img_size", "[H, W]")
                     + ".",
    "preprocess": "The preprocessing is not in the file: the {source} convention for {family} assumed (resize "
                  "{resize}, crop {crop}, {interpolation}, mean {mean}, std {std}); give its own as \"preprocess\" "
                  "in a sidecar JSON beside the file.",
    "processor": "The folder has no preprocessor_config.json: the defaults of {processor} assumed (resize {resize}, "
                 "crop {crop}, {interpolation}, mean {mean}, std {std}).",
    "labels": "The class names are not in the file: ImageNet-1k's assumed for its 1000 outputs; if it predicts "
              "other classes, put \"labels\" in a sidecar JSON beside the file.",
    # timm's relative-position, parallel-block and NaFlex ViTs, SigLIP 2's NaFlex tower
    "heads_parallel": "The number of attention heads is not in the file: {branches} branches of {heads} heads assumed, "
                      "as the published ViTs {width} wide have; if the branches hold N heads in all, give "
                      + _how("num_heads", "N") + ".",
    "block_order": "Where the LayerNorms sit is not in the file: after each branch assumed (timm's *_rpn blocks), as "
                   "the blocks have no LayerScale, which timm's pre-norm relative-position blocks all have; a pre-norm "
                   "model trained without LayerScale needs " + _how("res_post_norm", "false") + ".",
    "block_order_rpn": "Where the LayerNorms sit is not in the file: after each branch assumed (timm's "
                       "vit_base_patch16_rpn_224), the only timm ViT with these tensors (no CLS token, a LayerNorm "
                       "after pooling, no LayerScale); a pre-norm model with them needs "
                       + _how("res_post_norm", "false") + ".",
    "eps_beit3": "The LayerNorm eps is not in the file: 1e-5 assumed, as timm's BEiT-3 models (beit3_*) have, whose "
                 "tensors these are (LayerNorms inside attention and the MLP, a CLS token, a LayerNorm after "
                 "pooling); another eps E needs " + _how("layer_norm_eps", "E") + ".",
    "img_size_relpos": "The input size is not in the file: {size} assumed, as timm's relative-position ViTs {width} "
                       "wide with {patch}-pixel patches are configured (the bias is computed for any grid); for "
                       "another, give " + _how("img_size", "[H, W]") + ".",
    "img_size_naflex": "The input size is not in the file: {size} assumed, the input timm's NaFlexViT models are "
                       "configured for (each photo keeps its aspect ratio in at most {patches} patches); for another "
                       "budget, give " + _how("img_size", "[H, W]") + ".",
    "img_size_table": "The input size is not in the file: {size} assumed, the {grid} grid of its position table (each "
                      "photo keeps its aspect ratio in at most {patches} patches); for another budget, give "
                      + _how("img_size", "[H, W]") + ".",
    "act_naflex": "The MLP activation is not in the file: tanh GELU assumed, as SigLIP 2's NaFlex towers have (timm's "
                  "naflexvit_*_siglip, transformers' Siglip2VisionModel); one trained with exact GELU needs "
                  + _how("mlp_act", '"gelu"') + ".",
    "naflex_resize": "How the position table is resized to a photo's grid is not in the file: {interp}{aspect} "
                     "assumed, as timm's NaFlexViT models with these registers, LayerScale and pooling resize theirs; "
                     "for another, give pos_embed_interp (\"bicubic\" or \"bilinear\") and pos_embed_ar_preserving "
                     "(true or false) to vit.load or in a sidecar JSON's \"config\".",
}


class Assumption(str):
    """One fact the loader assumed: the English sentence itself, with ``key`` (of ``ASSUMED``) and ``fields``
    (language-neutral values: numbers, sizes, names) to say it in another language."""
    key: str
    fields: dict

    def __new__(cls, key: str, **fields) -> "Assumption":
        self = super().__new__(cls, ASSUMED[key].format(**fields))
        self.key, self.fields = key, fields
        return self

    def __reduce__(self):  # pickled (by a data-set worker) as what it is, not as a plain str
        return _assumption, (self.key, self.fields)


def _assumption(key: str, fields: dict) -> Assumption:
    return Assumption(key, **fields)


def heads(cfg: ViTConfig) -> Assumption:
    """The head count ``infer.default_num_heads`` gave this config."""
    if cfg.embed_dim in STANDARD_HEADS or cfg.num_heads != max(cfg.embed_dim // HEAD_DIM, 1):
        return Assumption("heads_known", heads=cfg.num_heads, width=cfg.embed_dim)
    return Assumption("heads_default", heads=cfg.num_heads, head_dim=cfg.embed_dim // cfg.num_heads)


def img_size(cfg: ViTConfig, count: int) -> Assumption:
    gh, gw = cfg.grid
    return Assumption("img_size", size=f"{cfg.img_size[0]}×{cfg.img_size[1]}", count=count, grid=f"{gh}×{gw}")


def swin_img_size(cfg) -> Assumption:
    """The input size ``swin_formats.infer_swin_config`` gave a Swin whose metadata names none."""
    return Assumption("swin_img_size", size=f"{cfg.img_size[0]}×{cfg.img_size[1]}", window=cfg.window_size[-1])


def naflex_size(cfg: ViTConfig, fmt: str) -> Assumption:
    """The input size a NaFlex model got from its family's configuration (timm) or its table's grid (SigLIP 2)."""
    gh, gw = cfg.grid
    size = f"{cfg.img_size[0]}×{cfg.img_size[1]}"
    if fmt == "timm-naflex":
        return Assumption("img_size_naflex", size=size, patches=gh * gw)
    return Assumption("img_size_table", size=size, grid=f"{gh}×{gw}", patches=gh * gw)


def family_facts(cfg: ViTConfig, fmt: str, read: dict) -> list[Assumption]:
    """What the relative-position, parallel-block and NaFlex families took from what distinguishes timm's models
    (``infer.format_facts``, ``infer.infer_config``) rather than from the file or its metadata."""
    said = []
    if cfg.parallel > 1 and "num_heads" not in read:
        said.append(Assumption("heads_parallel", branches=cfg.parallel, heads=cfg.num_heads // cfg.parallel,
                               width=cfg.embed_dim))
    if cfg.res_post_norm and "res_post_norm" not in read:
        said.append(Assumption("block_order" if cfg.rel_pos_mlp else "block_order_rpn"))
    if fmt == "timm" and cfg.attn_norm and cfg.mlp_norm and cfg.mlp_act != "swiglu" and cfg.fc_norm \
            and "layer_norm_eps" not in read:
        said.append(Assumption("eps_beit3"))
    if cfg.rel_pos_mlp and "img_size" not in read:
        said.append(Assumption("img_size_relpos", size=f"{cfg.img_size[0]}×{cfg.img_size[1]}", width=cfg.embed_dim,
                               patch=cfg.patch_size))
    if cfg.pos_embed_grid is not None and cfg.mlp_act == "gelu_tanh" and "mlp_act" not in read:
        said.append(Assumption("act_naflex"))
    if fmt == "timm-naflex" and not {"pos_embed_interp", "pos_embed_ar_preserving"} <= set(read):
        aspect = ", to a square of the longer side with the top-left kept" if cfg.pos_embed_ar_preserving else ""
        said.append(Assumption("naflex_resize", interp=f"{cfg.pos_embed_interp}, antialiased", aspect=aspect))
    return said


def described(prep: Preprocess) -> dict:
    """A preprocessing's fields as the sentences print them."""
    resize = prep.resize if isinstance(prep.resize, int) else f"{prep.resize[0]}×{prep.resize[1]}"
    return dict(resize=resize, crop=f"{prep.crop[0]}×{prep.crop[1]}", interpolation=prep.interpolation,
                mean=_numbers(prep.mean), std=_numbers(prep.std))


def _numbers(values) -> str:
    return "(" + ", ".join(f"{v:.4g}" for v in values) + ")"


# timm's headless ViTs without CLS token or registers are SigLIP's mean-pooled towers (pixels to [-1, 1]), except
# I-JEPA's ViT-H and ViT-g (ImageNet's mean and std), which no SigLIP tower is as wide as.
IJEPA_WIDTHS = (1280, 1408)


def default_preprocess(fmt: str, cfg: ViTConfig) -> tuple[Preprocess, Assumption]:
    """Preprocessing of a checkpoint that names none: its source's convention for the family at the model's native
    size, and the sentence that says it was assumed.

    Hugging Face key layouts: the family's image processor's defaults (ViT, BEiT, CLIP, SigLIP); OpenAI's and
    open_clip's CLIP: open_clip's defaults (shorter side to the crop, bicubic, CLIP's mean and std); torchvision: its
    ViT weights' 256 -> 224 bilinear crop with ImageNet's mean and std; SigLIP 2's NaFlex tower and timm's NaFlexViT:
    each photo at its aspect ratio in as many patches as the square input holds (Siglip2ImageProcessor's defaults
    with the model's patch; timm's NaFlex transform at its 384-pixel input_size, 0.5/0.5); anything else timm's
    default configuration (224 / 0.875 -> 256 -> 224, bicubic) with the family's mean and std (timm's CLIP and EVA-02
    use OpenAI's; SigLIP, BEiT, the ViTs without CLS token, the relative-position and parallel-block ViTs map pixels
    to [-1, 1], crop_pct 0.9; Google's big_vision too); a Swin's source's own Swin convention
    (``swin_formats.swin_default_preprocess``).
    """
    family = family_name(fmt, cfg)
    if fmt in SWIN_FORMATS:
        prep, source = swin_default_preprocess(fmt, cfg)
    elif fmt == "huggingface-clip" and cfg.pos_embed_grid is not None:  # SigLIP 2's NaFlex processor, the model's
        gh, gw = cfg.grid                                                 # patch, as many patches as its input holds
        prep, source = huggingface_preprocess({"patch_size": cfg.patch_size, "max_num_patches": gh * gw},
                                              "siglip2_vision_model", cfg.img_size), "Hugging Face"
    elif fmt == "timm-naflex":   # each photo at its own aspect ratio, in as many patches as the square input has
        prep, source = timm_preprocess({"input_size": (3, *cfg.img_size), "mean": INCEPTION_MEAN,
                                        "std": INCEPTION_STD}, naflex_patch=cfg.patch_size), "timm"
    elif fmt in ("huggingface", "huggingface-clip"):
        kind = cfg.family if cfg.family in ("beit", "clip", "siglip") else "vit"
        prep, source = huggingface_preprocess(None, kind, cfg.img_size), "Hugging Face"
    elif fmt == "openai-clip":
        prep, source = open_clip_preprocess(cfg.img_size), "open_clip"
    elif fmt == "torchvision":
        prep, source = Preprocess.for_crop(cfg.img_size, interpolation="bilinear", mean=IMAGENET_MEAN,
                                           std=IMAGENET_STD), "torchvision"
    elif fmt == "google-npz":
        prep, source = Preprocess.for_crop(cfg.img_size, interpolation="bicubic", mean=INCEPTION_MEAN,
                                           std=INCEPTION_STD), "big_vision"
    elif family in ("ViT", "DINO", "I-JEPA"):
        prep, source = Preprocess.for_crop(cfg.img_size, interpolation="bicubic", mean=IMAGENET_MEAN,
                                           std=IMAGENET_STD), "timm"
    else:
        mean, std = (OPENAI_CLIP_MEAN, OPENAI_CLIP_STD) if family in ("CLIP", "EVA-02", "AIMv2") else \
            (INCEPTION_MEAN, INCEPTION_STD)
        prep, source = Preprocess.for_crop(cfg.img_size, 0.9 if fmt == "timm" else 1.0, interpolation="bicubic",
                                           mean=mean, std=std), "timm"
    return prep, Assumption("preprocess", source=source, family=family, **described(prep))


def family_name(fmt: str, cfg: ViTConfig) -> str:
    """The family whose conventions a checkpoint without metadata gets: "EVA-02", "BEiT", "SigLIP", "CLIP",
    "relative-position ViT", "parallel-block ViT", "NaFlex ViT", "AIMv2", "DINO", "I-JEPA", "GAP ViT" (mean-pooled,
    no CLS token) or "ViT". A timm ViT without CLS token, head or registers is
    SigLIP's mean-pooled tower (I-JEPA's at its widths); with a head, one of timm's mean-pooled classifiers."""
    named = {"eva02": "EVA-02", "beit": "BEiT", "siglip": "SigLIP", "clip": "CLIP", "dinov3": "DINOv3",
             "rope_vit": "RoPE ViT", "relpos": "relative-position ViT", "parallel": "parallel-block ViT",
             "naflex": "NaFlex ViT", "swin": "Swin"}
    if cfg.family in named:
        return named[cfg.family]
    if cfg.norm_kind == "rmsnorm" and cfg.patch_norm:
        return "AIMv2"
    if fmt == "dino":
        return "DINO"
    if fmt == "timm" and not cfg.class_token:
        if cfg.num_classes or cfg.num_reg_tokens:
            return "GAP ViT"
        return "I-JEPA" if cfg.embed_dim in IJEPA_WIDTHS else "SigLIP"
    return "ViT"
