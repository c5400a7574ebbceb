"""Video checkpoints: transformers' VideoMAE, TimeSformer, ViViT and V-JEPA 2 classifiers (``save_pretrained`` folders
and their state dicts, in the file layout and in transformers ≥ 5's in-memory names) renamed to
``vit.video.VideoTransformer``'s tensors, and their config.json read as a ``VideoConfig``.

Every format is a swap table of (regex, replacement) pairs applied in order, as ``vit.checkpoints.formats`` does for
the ViTs; separate query/key/value projections are stacked into ``attn.qkv`` (VideoMAE's query and value biases into
``q_bias``/``v_bias``), TimeSformer's 2-D patch kernel becomes a Conv3d kernel one frame deep, V-JEPA 2's
self-supervised predictor (not part of the classifier) is dropped. Keys a table does not understand pass through
unchanged, so strict loading names them.
"""
from __future__ import annotations

import torch

from .formats import fuse_qkv, swap_keys
from ..video import VideoConfig
from ..video_file import VideoPreprocess

VIDEO_TYPES = ("videomae", "timesformer", "vivit", "vjepa2")   # transformers' model_type of the families we open
VIDEO_FORMATS = tuple(f"huggingface-{t}" for t in VIDEO_TYPES)
QKV = {"query": "q", "key": "k", "value": "v", "q_proj": "q", "k_proj": "k", "v_proj": "v"}

_BLOCK_COMMON = [
    (r"\.layernorm_before\.", ".norm1."),
    (r"\.layernorm_after\.", ".norm2."),
    (r"\.intermediate\.dense\.", ".mlp.fc1."),
    (r"\.output\.dense\.", ".mlp.fc2."),             # after the attention's output.dense has been renamed
]
SWAPS = {
    "videomae": [
        (r"^videomae\.embeddings\.patch_embeddings\.projection\.", "patch_embed.proj."),
        (r"^videomae\.encoder\.layer\.(\d+)\.", r"blocks.\1."),
        (r"\.attention\.attention\.(q|v)_bias$", r".attn.\1_bias"),              # the file layout
        (r"\.attention\.attention\.(query|key|value)\.", r".attn.\1."),
        (r"\.attention\.output\.dense\.", ".attn.proj."),
        *_BLOCK_COMMON,
        (r"^videomae\.layernorm\.", "norm."),
        (r"^classifier\.", "head."),
    ],
    "timesformer": [
        (r"^timesformer\.embeddings\.cls_token$", "cls_token"),
        (r"^timesformer\.embeddings\.position_embeddings$", "pos_embed"),
        (r"^timesformer\.embeddings\.time_embeddings$", "time_embed"),
        (r"^timesformer\.embeddings\.patch_embeddings\.projection\.", "patch_embed.proj."),
        (r"^timesformer\.encoder\.layer\.(\d+)\.", r"blocks.\1."),
        (r"\.temporal_layernorm\.", ".temporal_norm1."),
        (r"\.temporal_attention\.attention\.qkv\.", ".temporal_attn.qkv."),
        (r"\.temporal_attention\.output\.dense\.", ".temporal_attn.proj."),
        (r"\.temporal_dense\.", ".temporal_fc."),
        (r"\.attention\.attention\.qkv\.", ".attn.qkv."),
        (r"\.attention\.output\.dense\.", ".attn.proj."),
        *_BLOCK_COMMON,
        (r"^timesformer\.layernorm\.", "norm."),
        (r"^classifier\.", "head."),
    ],
    "vivit": [
        (r"^vivit\.embeddings\.cls_token$", "cls_token"),
        (r"^vivit\.embeddings\.position_embeddings$", "pos_embed"),
        (r"^vivit\.embeddings\.patch_embeddings\.projection\.", "patch_embed.proj."),
        (r"^vivit\.(encoder\.layer|layers)\.(\d+)\.", r"blocks.\2."),
        (r"\.attention\.attention\.(query|key|value)\.", r".attn.\1."),        # the file layout
        (r"\.attention\.(q_proj|k_proj|v_proj)\.", r".attn.\1."),             # transformers ≥ 5 in memory
        (r"\.attention\.(output\.dense|o_proj)\.", ".attn.proj."),
        *_BLOCK_COMMON,
        (r"\.mlp\.(fc1|fc2)\.", r".mlp.\1."),
        (r"^vivit\.layernorm\.", "norm."),
        (r"^classifier\.", "head."),
    ],
    "vjepa2": [
        (r"^vjepa2\.encoder\.embeddings\.patch_embeddings\.proj\.", "patch_embed.proj."),
        (r"^vjepa2\.encoder\.layer\.(\d+)\.", r"blocks.\1."),
        (r"\.attention\.(query|key|value)\.", r".attn.\1."),
        (r"\.attention\.proj\.", ".attn.proj."),
        (r"^vjepa2\.encoder\.layernorm\.", "norm."),
        (r"^pooler\.self_attention_layers\.(\d+)\.layer_norm(1|2)\.", r"probe.blocks.\1.norm\2."),
        (r"^pooler\.self_attention_layers\.(\d+)\.self_attn\.(q_proj|k_proj|v_proj)\.", r"probe.blocks.\1.attn.\2."),
        (r"^pooler\.self_attention_layers\.(\d+)\.self_attn\.out_proj\.", r"probe.blocks.\1.attn.proj."),
        (r"^pooler\.self_attention_layers\.(\d+)\.mlp\.", r"probe.blocks.\1.mlp."),
        (r"^pooler\.query_tokens$", "probe.query"),
        (r"^pooler\.cross_attention_layer\.layer_norm1\.", "probe.kv_norm."),
        (r"^pooler\.cross_attention_layer\.layer_norm2\.", "probe.mlp_norm."),
        (r"^pooler\.cross_attention_layer\.cross_attn\.(q|k|v)_proj\.", r"probe.cross.\1."),
        (r"^pooler\.cross_attention_layer\.mlp\.", "probe.mlp."),
        (r"^classifier\.", "head."),
    ],
}
DROP = {"vjepa2": [r"^vjepa2\.predictor\."]}


def detect_video(state: dict) -> str | None:
    """The video format of a state dict (one of ``VIDEO_FORMATS``), or None when its keys are not a video model's."""
    for prefix, kind in (("videomae.", "videomae"), ("timesformer.", "timesformer"), ("vivit.", "vivit"),
                         ("vjepa2.encoder.", "vjepa2")):
        if any(k.startswith(prefix) for k in state):
            return f"huggingface-{kind}"
    return None


def video_filter_fn(state: dict, fmt: str) -> dict:
    """A video checkpoint's tensors (format ``fmt``) -> ``vit.video.VideoTransformer``'s key names."""
    kind = fmt.removeprefix("huggingface-")
    if kind not in SWAPS:
        raise ValueError(f"Unknown video format {fmt!r}! Expected one of {VIDEO_FORMATS}.")
    sd = _fuse_qkv(swap_keys(state, SWAPS[kind], DROP.get(kind, [])))
    kernel = sd.get("patch_embed.proj.weight")
    if kernel is not None and kernel.ndim == 4:                   # TimeSformer: one frame per token
        sd["patch_embed.proj.weight"] = kernel.unsqueeze(2)
    return sd


def _fuse_qkv(sd: dict) -> dict:
    """….attn.{query,key,value}.{weight,bias} -> ….attn.qkv.weight (3D, D) and qkv.bias (3D,); a query and value
    bias without a key bias -> attn.q_bias and attn.v_bias (VideoMAE) (``formats.fuse_qkv``); the probe's
    cross-attention's q -> probe.q, its k and v -> probe.kv."""
    def probe(prefix: str, kind: str, qkv: dict) -> dict | None:
        if prefix != "probe.cross":
            return None
        return {f"probe.q.{kind}": qkv["q"], f"probe.kv.{kind}": torch.cat([qkv["k"], qkv["v"]])}

    return fuse_qkv(sd, r"(.*\.(?:attn|cross))\.(query|key|value|q_proj|k_proj|v_proj|q|k|v)\.(weight|bias)",
                    {**QKV, "q": "q", "k": "k", "v": "v"}, joined=probe)


HF_VIDEO_ACTIVATIONS = {"gelu": "gelu", "gelu_fast": "gelu_tanh", "gelu_new": "gelu_tanh",
                        "gelu_pytorch_tanh": "gelu_tanh"}   # transformers' hidden_act -> VideoConfig.mlp_act


def huggingface_video_config(hf: dict, where: str) -> dict:
    """A transformers video config.json -> ``VideoConfig`` fields; ValueError for what the families here do not run
    (VideoMAE reading its first token, TimeSformer's joint or space-only attention, an unknown activation)."""
    kind = hf["model_type"]
    act = hf.get("hidden_act", "gelu")
    if act not in HF_VIDEO_ACTIVATIONS:
        raise ValueError(f"{where}: hidden_act {act!r} is not supported! Expected one of "
                         f"{sorted(HF_VIDEO_ACTIVATIONS)}.")
    common = dict(embed_dim=hf.get("hidden_size", 768), depth=hf.get("num_hidden_layers", 12),
                  num_heads=hf.get("num_attention_heads", 12), mlp_act=HF_VIDEO_ACTIVATIONS[act])
    if kind == "vjepa2":
        size, D = hf.get("crop_size", 256), common["embed_dim"]
        return dict(common, img_size=(size, size), num_frames=hf.get("frames_per_clip", 64),
                    tubelet_size=hf.get("tubelet_size", 2), patch_size=_one(hf.get("patch_size", 16), where),
                    in_chans=hf.get("in_chans", 3), mlp_dim=int(D * hf.get("mlp_ratio", 4.0)),
                    qkv_bias=hf.get("qkv_bias", True), class_token=False, pos_embed="rope3d", global_pool="probe",
                    layer_norm_eps=hf.get("layer_norm_eps", 1e-6), probe_depth=hf.get("num_pooler_layers", 3),
                    probe_mlp_dim=4 * D)
    size = hf.get("image_size", 224)
    common.update(img_size=tuple(size) if isinstance(size, (list, tuple)) else (size, size),
                  num_frames=hf.get("num_frames", 16), in_chans=hf.get("num_channels", 3),
                  mlp_dim=hf.get("intermediate_size", 3072))
    if kind == "videomae":
        if not hf.get("use_mean_pooling", True):
            raise ValueError(f"{where}: a VideoMAE classifier that reads its first patch token (use_mean_pooling "
                             f"false) is not supported! Expected the mean pooling every published VideoMAE "
                             f"classifier uses.")
        bias = hf.get("qv_bias", hf.get("qkv_bias", True))
        return dict(common, tubelet_size=hf.get("tubelet_size", 2), patch_size=_one(hf.get("patch_size", 16), where),
                    qkv_bias=bias, k_bias=False, pos_embed="sincos", global_pool="avg",
                    layer_norm_eps=hf.get("layer_norm_eps", 1e-12))
    if kind == "timesformer":
        if hf.get("attention_type", "divided_space_time") != "divided_space_time":
            raise ValueError(f"{where}: TimeSformer's attention_type {hf['attention_type']!r} is not supported! "
                             f"Expected 'divided_space_time' (every published TimeSformer's).")
        return dict(common, tubelet_size=1, patch_size=_one(hf.get("patch_size", 16), where),
                    qkv_bias=hf.get("qkv_bias", True), attention="divided", class_token=True,
                    pos_embed="space_time", global_pool="token", layer_norm_eps=hf.get("layer_norm_eps", 1e-6))
    if kind == "vivit":
        t, ph, pw = hf.get("tubelet_size", (2, 16, 16))
        if ph != pw:
            raise ValueError(f"{where}: ViViT's tubelets {t}×{ph}×{pw} are not square in space! Expected "
                             f"tubelet_size [t, P, P].")
        return dict(common, tubelet_size=t, patch_size=ph, qkv_bias=hf.get("qkv_bias", True), class_token=True,
                    pos_embed="learned", global_pool="token", layer_norm_eps=hf.get("layer_norm_eps", 1e-6))
    raise ValueError(f"{where}: unsupported video model_type {kind!r}! Expected one of {VIDEO_TYPES}.")


def _one(patch, where: str) -> int:
    """A square patch size given as a number or a pair."""
    if isinstance(patch, (list, tuple)):
        if len(set(patch)) != 1:
            raise ValueError(f"{where}: patches {patch} are not square! Expected one patch size.")
        return int(patch[0])
    return int(patch)


# transformers' video processors' class defaults (VideoMAEVideoProcessor, TimesformerVideoProcessor,
# VivitVideoProcessor, VJEPA2VideoProcessor; their image processors have the same): shortest edge, crop, mean, std,
# rescale, and ViViT's offset (pixels × 1/127.5 − 1 before its normalisation). All resize bilinearly.
IMAGENET_STANDARD = (0.5, 0.5, 0.5)
IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
HF_VIDEO_PROCESSORS = {
    "videomae": dict(size=224, crop=224, mean=IMAGENET_STANDARD, std=IMAGENET_STANDARD, rescale=1 / 255, offset=False),
    "timesformer": dict(size=224, crop=224, mean=IMAGENET_DEFAULT_MEAN, std=IMAGENET_DEFAULT_STD, rescale=1 / 255,
                        offset=False),
    "vivit": dict(size=256, crop=224, mean=IMAGENET_STANDARD, std=IMAGENET_STANDARD, rescale=1 / 127.5, offset=True),
    "vjepa2": dict(size=292, crop=256, mean=IMAGENET_DEFAULT_MEAN, std=IMAGENET_DEFAULT_STD, rescale=1 / 255,
                   offset=False),
}
PIL_BILINEAR, PIL_BICUBIC = 2, 3


def huggingface_video_preprocess(settings: dict | None, kind: str, cfg: VideoConfig):
    """A folder's video processor (video_preprocessor_config.json or preprocessor_config.json ``settings`` over its
    class's defaults) as a ``vit.video_file.VideoPreprocess`` reading the model's ``num_frames`` frames, sampled as
    the processor's own ``sample_frames`` samples them (uniformly over the video). Without settings: the class's
    defaults with the crop made the model's frame size, the resize in the class's proportion."""
    d = HF_VIDEO_PROCESSORS[kind]
    s = dict(settings or {})
    crop = s.get("crop_size", d["crop"])
    crop = (crop["height"], crop["width"]) if isinstance(crop, dict) else (int(crop), int(crop))
    if settings is None:
        crop = cfg.img_size
    if not s.get("do_resize", True) or not s.get("do_center_crop", True):
        raise ValueError("The video processor turns its resize or its centre crop off, so the frames' size would "
                         "follow the video! Expected do_resize and do_center_crop true, as every processor of these "
                         "families has them.")
    if kind == "vjepa2":                       # VJEPA2VideoProcessor derives its resize from the crop
        resize = int(crop[0] * 256 / 224)
    elif "size" in s:
        size = s["size"]
        if not (isinstance(size, dict) and size.get("shortest_edge")):
            raise ValueError(f"The video processor's size {size!r} is not supported! Expected "
                             f"{{\"shortest_edge\": N}}, the resize every video processor of these families uses.")
        resize = int(size["shortest_edge"])
    else:
        resize = int(crop[0] * d["size"] / d["crop"])
    resample = s.get("resample", PIL_BILINEAR)
    if resample not in (PIL_BILINEAR, PIL_BICUBIC):
        raise ValueError(f"The video processor's resample {resample!r} is not supported! Expected bilinear (2) or "
                         f"bicubic (3).")
    normalise = s.get("do_normalize", True)
    rescale = s.get("rescale_factor", d["rescale"]) if s.get("do_rescale", True) else 1.0
    offset = bool(s.get("offset", d["offset"])) and s.get("do_rescale", True)
    return VideoPreprocess(resize=resize, crop=crop, interpolation="bilinear" if resample == PIL_BILINEAR else "bicubic",
                           rescale=float(rescale), offset=offset,
                           mean=tuple(s.get("image_mean", d["mean"])) if normalise else (0.0,) * 3,
                           std=tuple(s.get("image_std", d["std"])) if normalise else (1.0,) * 3,
                           num_frames=cfg.num_frames)
