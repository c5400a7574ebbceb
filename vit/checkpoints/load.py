"""``vit.load(source)``: find a checkpoint, read it safely, and return our model with its preprocessing and labels.

Sources, tried in this order: None/"default" (torchvision's ViT-B/16 IMAGENET1K_V1); a path to a file or
a Hugging Face folder; a known name (vit.registry) looked up in weights/ and the torch hub cache, and for
torchvision's weights downloaded into the torch hub cache when online; a file name inside weights/; a model on the
Hugging Face Hub by name ("facebook/dinov2-small", timm's "hf-hub:timm/…"), from the Hub cache or downloaded into it
(``vit.checkpoints.hub``: weights and configuration only).

The model comes with its source's own preprocessing (``vit.checkpoints.pipelines``), or the crop or squash a
user asks for: ``vit.load(source, preprocess="squash")``, or ``loaded.with_preprocess("crop")`` for the same
model object with another preprocessing.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch

from . import assumptions, families, hub, registry
from .assumptions import Assumption
from .formats import checkpoint_filter_fn, detect_format, google_num_heads, load_strict, resample_pos_embed, \
    unwrap_state_dict
from .files import CHECKPOINT_SUFFIXES, OWN_FORMAT, OWN_VERSION, read_file
from .huggingface import read_folder as read_huggingface_folder
from .infer import checkpoint_grid, format_facts, infer_config
from .pipelines import source_preprocess
from .references import Origin
from .timm_library import TimmArchitecture
from .verify import UNVERIFIED, Verification, check
from .timm_names import Named, named
from .sam_formats import detect_sam, infer_sam_config, sam_filter_fn, sam_preprocess
from .swin_formats import detect_swin, infer_swin_config, swin_filter_fn, timm_swin_config, window_from_buffers
from .video_formats import detect_video, video_filter_fn
from ..clip import TextTower, TextTransformer, Tokenizer, bundled_tokenizer, infer_text_config
from ..labels import default_labels, imagenet_labels
from ..model import ViTConfig, VisionTransformer, sincos_2d_position_embedding, variant
from ..sam import SamConfig, SamImageEncoder
from ..swin import SwinConfig, SwinTransformer
from ..video import VideoConfig, VideoTransformer
from ..video_file import VideoPreprocess
from ..preprocess import CHOICES, Preprocess
from ..readout import from_timm

_REPO = Path(__file__).resolve().parents[2]
SIDECAR_FIELDS = {"name", "variant", "architecture", "model_args", "config", "format", "preprocess", "labels"}


def weights_dir() -> Path:
    """Folder of local checkpoints: $VIT_WEIGHTS_DIR, else <repo>/weights (read on every call)."""
    return Path(os.environ.get("VIT_WEIGHTS_DIR") or _REPO / "weights")


WEIGHTS_DIR = weights_dir()


@dataclass
class LoadedModel:
    model: VisionTransformer | SwinTransformer | SamImageEncoder | VideoTransformer = field(repr=False)  # eval mode
    preprocess: Preprocess | VideoPreprocess    # PIL image -> (1, 3, H, W) (a video model's: frames -> (1, T, 3, H, W))
    labels: list[str] = field(repr=False)       # class index -> name ([] for a backbone without head)
    name: str                                   # short display name
    source: str                                 # the path or known name it came from
    config: ViTConfig | SwinConfig | SamConfig | VideoConfig = field(repr=False)
    format: str                                 # checkpoint format it was read from (see vit.checkpoint.FILTERS)
    text: TextTower | None = field(default=None, repr=False)  # CLIP's text tower and tokenizer, when the file has one
    own_preprocess: Preprocess | None = field(default=None, repr=False)  # the source's own (None: ``preprocess``)
    preprocess_choice: str = "own"              # which of vit.preprocess.CHOICES ``preprocess`` is
    # What the loader assumed rather than read (the heads from the width, a bare CLIP's activation, the input size,
    # the preprocessing, the class names), one sentence each with the way to give the real value; [] when nothing
    # was assumed. Each is a ``vit.checkpoints.assumptions.Assumption`` (a str with a key for other languages).
    assumptions: list[str] = field(default_factory=list)
    # The load checked against the checkpoint's own library (``vit.checkpoints.verify``): "checked against timm
    # 1.0.31: Δ 3e-07", "unverified" (asked not to), or "not verified (timm is not installed)"
    verified: Verification = UNVERIFIED
    origin: Origin | None = field(default=None, repr=False)   # what the check reads; None once ``load`` has run it

    def __post_init__(self):
        if self.own_preprocess is None:
            self.own_preprocess = self.preprocess

    def with_preprocess(self, choice: str) -> "LoadedModel":
        """The same model (the same object, no copy) shown photos another way: "own" (its source's
        preprocessing), "crop" (aspect ratio kept, centre cut out) or "squash" (the whole photo stretched)."""
        return dataclasses.replace(self, preprocess=self.own_preprocess.choose(choice), preprocess_choice=choice)

    def preprocess_record(self) -> dict:
        """What result.json says about the preprocessing: {"mode" (own, crop or squash), "resize", "crop",
        "interpolation", "mean", "std", "resize_mode", "rescale", "centre", "fill"}."""
        return {"mode": self.preprocess_choice, **self.preprocess.to_dict()}


@dataclass
class _Meta:
    """What a checkpoint's tensors do not say, gathered from the registry, a sidecar JSON or a HF config."""
    name: str
    format: str | None = None
    config: dict = field(default_factory=dict)
    preprocess: Preprocess | None = None
    labels: list[str] | None = None
    variant: str | None = None
    text_config: dict = field(default_factory=dict)  # TextConfig fields the text tower's tensors do not show
    tokenizer: Tokenizer | None = None                # a folder's own CLIP tokenizer (else the bundled one)
    activation: str | None = None                     # a plain MLP's activation its metadata names (timm's name)
    assumptions: tuple = ()                           # what its metadata leaves out (a folder's missing processor)
    timm: TimmArchitecture | None = None              # the timm architecture it names, as timm builds it
    path: Path | None = None                          # the file or folder it was read from
    head_projects: bool = False                       # timm's head is the projection into an image–text space


def list_local_checkpoints(directory: str | Path | None = None) -> list[str]:
    """Names of the checkpoints in weights/ (files with a checkpoint suffix and Hugging Face folders), sorted.

    Training's resume files (``NAME.last.pt``) are left out: ``NAME.pt`` beside them is the model to look at.
    """
    directory = Path(directory) if directory else weights_dir()
    if not directory.is_dir():
        return []
    return sorted(p.name for p in directory.iterdir()
                  if (p.is_file() and p.suffix in CHECKPOINT_SUFFIXES and not p.stem.endswith(".last"))
                  or (p.is_dir() and ((p / "config.json").is_file() or (p / "open_clip_config.json").is_file())))


def shared_weights_dir() -> Path:
    """The folder of shared checkpoints beside the repository, ``<repo>/../shared/weights`` (it may not exist)."""
    return _REPO.parent / "shared" / "weights"


def checkpoints_on_this_machine() -> list[Path]:
    """Checkpoint files someone can start with right away, without a download: those in weights/ (or
    $VIT_WEIGHTS_DIR) and in ``../shared/weights`` beside the repository, sorted; [] when there are none."""
    found = []
    for folder in dict.fromkeys((weights_dir(), shared_weights_dir())):
        found += [folder / name for name in list_local_checkpoints(folder)]
    return found


def load(source: str | Path | None = None, *, download: bool | None = None, preprocess: str = "own",
         verify: bool = True, **overrides) -> LoadedModel:
    """Load a checkpoint as our VisionTransformer (eval mode) with its preprocessing and labels.

    ``source``: None or "default", a path (file or Hugging Face folder), a known name (see
    ``vit.registry``), a file name in weights/, or a Hugging Face Hub name ("facebook/dinov2-small",
    "hf-hub:timm/…", "org/name@revision"). ``download`` (default: unless $VIT_OFFLINE is set) lets torchvision's
    weights download into the torch hub cache and Hub models into the Hub cache (HF_HUB_OFFLINE also keeps to it).
    ``preprocess``: "own" (the source's own preprocessing), "crop" or "squash" (see ``vit.Preprocess.choose``).
    ``overrides`` are ViTConfig fields that win over what is inferred (e.g. ``num_heads=6``, or
    ``img_size=(384, 384)``: position embeddings are then resampled; ``num_classes=0``: the backbone without its
    classifier). What was assumed rather than read is listed in ``LoadedModel.assumptions``.

    ``verify``: check the model against its own library's model of the same file (``vit.checkpoints.verify``:
    ``LoadedModel.verified``); a difference beyond float32 tolerance is a ValueError that gives both numbers and
    the likely cause. False: "unverified". ValueError for a bad or mismatched checkpoint, FileNotFoundError when
    nothing is found (the message says what to download and where to put it).
    """
    if preprocess not in CHOICES:
        raise ValueError(f"Unknown preprocessing {preprocess!r}! Expected one of {list(CHOICES)}.")
    loaded = _load(source, download, overrides)
    if verify and loaded.origin is not None:
        loaded.verified = check(loaded.model, loaded.config, loaded.origin, loaded.source, overrides,
                                loaded.assumptions)
    loaded.origin = None
    return loaded if preprocess == "own" else loaded.with_preprocess(preprocess)


def _load(source: str | Path | None, download: bool | None, overrides: dict) -> LoadedModel:
    if download is None:
        download = not os.environ.get("VIT_OFFLINE")
    if source is not None and not str(source).strip():
        raise ValueError("Empty checkpoint source! Expected a path, a known name such as 'default', or a file in "
                         f"{weights_dir()}.")
    text = "default" if source is None else str(source)
    path = Path(text).expanduser()
    if source is not None and path.exists():
        return _load_path(path, text, overrides)
    known = registry.by_name(text)
    if known is not None:
        return _load_known(known, download, overrides)
    local = weights_dir() / text
    if local.exists():
        return _load_path(local, text, overrides)
    named = hub.hub_name(text)
    if named is not None:
        repo, revision = named
        folder = hub.fetch(repo, revision, download)
        return _load_path(folder, text, overrides, name=repo + (f"@{revision}" if revision else ""))
    available = list_local_checkpoints()
    raise FileNotFoundError(
        f"No checkpoint {text!r}: it is not an existing path, not a known name (e.g. 'default', "
        f"{registry.SHARED_CHECKPOINTS[0].name!r}, 'vit_b_16') and not a file in {weights_dir()} "
        f"(which holds: {', '.join(available) or 'nothing'}), nor a Hugging Face Hub name (org/name). Put the file in "
        f"{weights_dir()}, pass its path, or give the model's Hub name.")


def _load_known(known: registry.KnownCheckpoint, download: bool, overrides: dict) -> LoadedModel:
    """A known checkpoint from weights/ or the torch hub cache, else downloaded into that cache."""
    places = [weights_dir() / known.filename, Path(torch.hub.get_dir()) / "checkpoints" / known.filename]
    for p in places:
        if p.is_file():
            return _load_path(p, str(p), overrides, known=known)
    error = None
    if download and known.downloadable:
        try:  # what torchvision's weights enums do: into the torch hub cache, hash-checked, no pickled code run
            state = torch.hub.load_state_dict_from_url(known.url, progress=True, check_hash=True, weights_only=True)
            return _build(state, known.url, _meta_from_known(known), overrides)
        except OSError as e:  # URLError is an OSError: offline, DNS failure, refused connection
            error = e
        except RuntimeError as e:  # torch.hub's hash check: a corrupted or substituted download
            raise ValueError(f"The download of {known.url} is not the published file: {e}") from None
    why = f"Downloading failed ({error}). " if error else (
        "Downloading is off (download=False or VIT_OFFLINE is set). " if known.downloadable else "")
    raise FileNotFoundError(
        f"Checkpoint {known.name!r} is not available offline. Looked for: {', '.join(map(str, places))}. {why}"
        f"Download {known.url} and save it as {weights_dir() / known.filename} (or set VIT_WEIGHTS_DIR to the "
        f"folder that holds {known.filename}), or start with a checkpoint you have: vit.load(PATH), or --weights PATH "
        f"for python app.py and python -m viz.")


def _meta_from_known(known: registry.KnownCheckpoint) -> _Meta:
    """A known checkpoint is an ImageNet-1k classifier, or a backbone without classes (``vit.checkpoints.registry``)."""
    return _Meta(name=known.name, format=known.format, config=dict(known.config), preprocess=known.preprocess,
                 labels=imagenet_labels() if known.imagenet_classes else [])


def _load_path(path: Path, source: str, overrides: dict, known: registry.KnownCheckpoint | None = None,
               name: str | None = None) -> LoadedModel:
    """A file or a folder; ``name`` the display name (a Hub snapshot's folder is named by its commit)."""
    if path.is_dir():
        hf = read_huggingface_folder(path)
        meta = _Meta(name=name or path.name, format=hf.format, config=hf.config, labels=hf.labels,
                     preprocess=hf.preprocess, text_config=hf.text_config, tokenizer=hf.tokenizer,
                     activation=hf.activation, assumptions=hf.assumptions, timm=hf.timm, path=path,
                     head_projects=hf.head_projects)
        return _build(hf.state, source, meta, overrides)
    raw = read_file(path)
    known = known or registry.identify(path)
    meta = dataclasses.replace(_meta_from_known(known) if known else _Meta(name=path.stem), path=path)
    sidecar = path.with_suffix(".json")
    if sidecar.is_file():
        meta = _apply_sidecar(meta, sidecar, raw)
    return _build(raw, source, meta, overrides)


def _apply_sidecar(meta: _Meta, path: Path, raw: dict) -> _Meta:
    """model.pt + model.json: {"name", "variant", "architecture", "model_args", "config", "format", "preprocess",
    "labels"} (all optional).

    "architecture": timm's name of the model (what its file does not show: its rotation, norms, readout; read from
    timm itself when it is installed, ``timm_names.named``), "model_args" what it was made with (as timm's Hub
    config.json records them); "config" fields win over it. "preprocess": ``vit.Preprocess`` fields, or one source's own settings under its name
    (``source_preprocess``)."""
    try:
        d = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"Sidecar {path} is not valid JSON: {e}") from None
    if not isinstance(d, dict) or set(d) - SIDECAR_FIELDS:
        raise ValueError(f"Sidecar {path} must be a JSON object with some of {sorted(SIDECAR_FIELDS)}; got "
                         f"{sorted(d) if isinstance(d, dict) else type(d).__name__}.")
    labels = d.get("labels", meta.labels)
    if labels == "imagenet":
        labels = imagenet_labels()
    elif labels is not None and not (isinstance(labels, list) and all(isinstance(s, str) for s in labels)):
        raise ValueError(f"Sidecar {path}: labels must be a list of strings or \"imagenet\".")
    if not isinstance(d.get("config", {}), dict) or not isinstance(d.get("preprocess", {}), dict):
        raise ValueError(f"Sidecar {path}: config and preprocess must be JSON objects.")
    try:
        preprocess = source_preprocess(d["preprocess"]) if "preprocess" in d else meta.preprocess
    except (ValueError, TypeError) as e:
        raise ValueError(f"Sidecar {path}: {e}") from None
    if not isinstance(d.get("model_args", {}), dict):
        raise ValueError(f"Sidecar {path}: model_args must be a JSON object (timm.create_model's arguments).")
    name = named(str(d["architecture"]), d.get("model_args"), unwrap_state_dict(raw), _timm_prefix(raw)) \
        if "architecture" in d else Named({})
    return dataclasses.replace(meta, name=d.get("name", meta.name), format=d.get("format", meta.format),
                               config={**meta.config, **name.fields, **d.get("config", {})}, preprocess=preprocess,
                               labels=labels, variant=d.get("variant", meta.variant),
                               activation=name.activation or meta.activation,
                               assumptions=(*meta.assumptions, *name.said), timm=name.timm,
                               head_projects=name.head_projects)


def _timm_prefix(raw: dict) -> str:
    """The prefix before timm's key names in a state dict (DataParallel's module., DINO's backbone.)."""
    keys = unwrap_state_dict(raw)
    return next((p for p in ("module.backbone.", "backbone.", "module.", "") if f"{p}patch_embed.proj.weight" in keys
                 or f"{p}embeds.proj.weight" in keys), "")


def _build(raw: dict, source: str, meta: _Meta, overrides: dict) -> LoadedModel:
    """Checkpoint dict -> LoadedModel: unwrap, detect the format, rename keys, infer the config, load strictly; what
    neither the tensors nor the metadata say follows the family's convention and is listed in ``assumptions``."""
    if raw.get("format") == OWN_FORMAT:
        return _build_own(raw, source, meta, overrides)
    state = origin = unwrap_state_dict(raw)
    video = detect_video(state)
    if video:
        return _build_video(state, video, source, meta, overrides)
    sam = detect_sam(state)
    if sam:
        return _build_sam(state, sam, source, meta, overrides)
    swin = detect_swin(state)
    if swin:
        return _build_swin(state, swin, source, meta, overrides)
    fmt = meta.format or detect_format(state)
    read = {}  # config fields the file or its metadata states
    if fmt == "google-npz":
        read["num_heads"] = google_num_heads(state)
    if meta.variant:  # the named variant's shape; strict loading reports where the weights disagree
        v = variant(meta.variant)
        read.update({k: getattr(v, k) for k in ("patch_size", "embed_dim", "depth", "num_heads", "mlp_dim")})
    read.update({**meta.config, **overrides})
    convention = {}
    # OpenAI's own state dict (saved from its TorchScript archive) keeps the archive's metadata tensors: QuickGELU is
    # then known; a bare open_clip state dict may be either (open_clip folders say which in their config)
    openai_file = fmt == "openai-clip" and any(k in state for k in OPENAI_METADATA)
    if fmt == "openai-clip" and "mlp_act" not in read:
        convention["mlp_act"] = "quick_gelu"
    if fmt in TIMM_FORMATS:  # timm resizes a position table with antialiasing (resample_abs_pos_embed's default)
        convention["pos_embed_antialias"] = True
    identified = families.identify(state, fmt, read, source, meta.preprocess)   # a rotary family, or a refusal
    if identified is not None:
        read.update(identified.read)
        convention.update(identified.convention)
        meta = dataclasses.replace(meta, preprocess=meta.preprocess or identified.preprocess,
                                   assumptions=(*meta.assumptions, *identified.said))
    convention.update(format_facts(fmt, state, read))   # what only the key layout shows (NaFlex tables, SigLIP 2)
    state = checkpoint_filter_fn(state, fmt)
    if meta.head_projects or (identified is not None and identified.head_projects):   # PE core: timm's head projects
        state = {re.sub(r"^head\.", "proj.", k): v for k, v in state.items()}
    text_state = {k.removeprefix("text."): state.pop(k) for k in [k for k in state if k.startswith("text.")]}
    if overrides.get("num_classes") == 0:  # the backbone, asked for without its classifier
        state = {k: v for k, v in state.items() if not re.match(r"(head|head_dist)\.", k)}
    cfg = infer_config(state, **{**convention, **read})
    if meta.activation and "mlp_act" not in read and cfg.mlp_act != "swiglu":
        cfg = dataclasses.replace(cfg, mlp_act=meta.activation)
    said = [*meta.assumptions, *_config_assumptions(state, cfg, fmt, read, meta, openai_file)]
    state = _fit_pos_embed(state, cfg, checkpoint_grid(state, cfg))
    loaded = _finish(state, cfg, source, meta, fmt, overrides, said, Origin(fmt, origin, meta.path, meta.timm))
    if text_state:
        loaded.text = _build_text(text_state, source, meta, {"mlp_act": cfg.mlp_act} if fmt == "openai-clip" else {})
    return loaded


def _build_swin(state: dict, fmt: str, source: str, meta: _Meta, overrides: dict) -> LoadedModel:
    """A Swin checkpoint -> LoadedModel: windows read off saved buffers, keys renamed, config inferred, strict load.
    torchvision's Swins are marked as padding a stage smaller than its window (refused at such sizes). An input size
    no metadata gives is assumed, and said."""
    windows = {s: w for s in range(16) if (w := window_from_buffers(state, s))}
    origin = Origin(fmt, state, meta.path)
    state = swin_filter_fn(state, fmt)
    hints = {**({"shrink_window": False} if fmt == "torchvision-swin" else {}), **meta.config, **overrides}
    if fmt == "timm-swin" and meta.path is not None and "window_size" not in hints:   # a file named as timm names it
        hints.update(timm_swin_config(meta.path.stem))
    try:
        cfg = infer_swin_config(state, windows, **hints)
    except TypeError as e:  # a ViT field in a sidecar or override
        raise ValueError(f"{source}: a Swin checkpoint, whose config does not take these fields: {e}. Give only "
                         f"vit.SwinConfig's fields (img_size, window_size, pretrained_window_sizes, …).") from None
    said = list(meta.assumptions)
    if "img_size" not in hints and not cfg.absolute_pos_embed:   # an absolute table's grid says it
        said.append(assumptions.swin_img_size(cfg))
    return _finish(state, cfg, source, meta, fmt, overrides, said, origin)


def _build_video(state: dict, fmt: str, source: str, meta: _Meta, overrides: dict) -> LoadedModel:
    """A video classifier's tensors -> LoadedModel: keys renamed, the config its folder's config.json gave (tensors
    alone do not say the frames, the attention or the readout: a bare file is refused), strict load."""
    if not meta.config:
        raise ValueError(f"{source}: a {fmt.removeprefix('huggingface-')} video model's tensors without its "
                         f"config.json! Open the folder save_pretrained wrote (config.json beside the weights).")
    state = video_filter_fn(state, fmt)
    head = state.get("head.weight")
    try:
        cfg = VideoConfig(**{**meta.config, "num_classes": int(head.shape[0]) if head is not None else 0,
                             **overrides})
    except TypeError as e:
        raise ValueError(f"{source}: a video checkpoint, whose config does not take these fields: {e}. Give only "
                         f"vit.VideoConfig's fields (num_frames, img_size, drop_rate, …).") from None
    return _finish(state, cfg, source, meta, fmt, overrides, list(meta.assumptions), Origin(fmt, state, meta.path))


def _build_sam(state: dict, fmt: str, source: str, meta: _Meta, overrides: dict) -> LoadedModel:
    """SAM's image encoder -> LoadedModel: keys renamed, everything read off the tensors but the blocks' LayerNorm eps
    (its source's, said when no metadata gives it), SAM's own preprocessing unless a folder gives one."""
    origin = Origin(fmt, state, meta.path)
    sd = sam_filter_fn(state, fmt)
    given = {**meta.config, **overrides}
    cfg = infer_sam_config(sd, fmt, **given)
    said = list(meta.assumptions)
    if "layer_norm_eps" not in given:
        said.append(Assumption("sam_eps", eps=f"{cfg.layer_norm_eps:g}", source=SAM_SOURCES[fmt]))
    if meta.preprocess is None:
        meta = dataclasses.replace(meta, preprocess=sam_preprocess(cfg.img_size))
    return _finish(sd, cfg, source, meta, fmt, overrides, said, origin)


SAM_SOURCES = {"timm-sam": "timm samvit_*", "sam": "Meta SAM", "huggingface-sam": "transformers SamModel"}
OPENAI_METADATA = ("input_resolution", "context_length", "vocab_size")  # tensors of OpenAI's TorchScript CLIP archives
TIMM_FORMATS = ("timm", "open-clip-timm", "timm-naflex")  # tensors in timm's layout, run as timm runs them


def _config_assumptions(state: dict, cfg: ViTConfig, fmt: str, read: dict, meta: _Meta,
                        openai_file: bool) -> list[Assumption]:
    """What ``cfg`` took from a convention rather than from the tensors or the metadata."""
    said = []
    relative = cfg.rel_pos_bias or cfg.rel_pos_mlp          # a bias per head: a column of the table, an MLP output
    if "num_heads" not in read and not relative and cfg.parallel == 1:   # parallel branches: ``family_facts``
        said.append(assumptions.heads(cfg))
    if "mlp_act" not in read and meta.activation is None and cfg.mlp_act != "swiglu":   # a gated MLP shows
        family = assumptions.family_name(fmt, cfg)
        if fmt == "openai-clip" and not openai_file:
            said.append(Assumption("act_openai_clip"))
        elif fmt == "timm" and family == "CLIP":
            said.append(Assumption("act_clip"))
        elif fmt == "timm" and family == "SigLIP":
            said.append(Assumption("act_siglip"))
    if cfg.family == "eva02" and cfg.rope_ref_grid is not None and "rope_ref_grid" not in read:
        said.append(Assumption("rope_grid", grid="×".join(map(str, cfg.rope_ref_grid))))
    if "img_size" not in read and cfg.pos_embed_kind == "learned" and "pos_embed" in state:
        if cfg.pos_embed_grid is None:
            # a named timm architecture's input size (its Hub folder's pretrained_cfg) that is the table's grid says it
            named_size = meta.timm is not None and meta.preprocess is not None and \
                tuple(meta.preprocess.crop) == tuple(cfg.img_size)
            if not named_size:
                said.append(assumptions.img_size(cfg, int(state["pos_embed"].shape[1]) - cfg.num_pos_prefix))
        else:   # a NaFlex model: its input is a budget of patches, the table has a grid of its own
            said.append(assumptions.naflex_size(cfg, fmt))
    return said + assumptions.family_facts(cfg, fmt, read)


def _build_text(state: dict, source: str, meta: _Meta, defaults: dict) -> TextTower:
    """A CLIP text tower from its tensors (our key names, ``text.`` removed), loaded strictly, with its tokenizer."""
    cfg = infer_text_config(state, **{**defaults, **meta.text_config})
    with torch.device("meta"):
        model = TextTransformer(cfg)
    state = {k: v.float().contiguous() if torch.is_floating_point(v) else v for k, v in state.items()}
    load_strict(model, state, f"{source} (text tower)", assign=True)
    tokenizer = meta.tokenizer or bundled_tokenizer()
    if len(tokenizer.encoder) > cfg.vocab_size:
        raise ValueError(f"{source}: the tokenizer has {len(tokenizer.encoder)} tokens but the text tower embeds only "
                         f"{cfg.vocab_size}. Expected CLIP's vocabulary (49,408 tokens).")
    return TextTower(model.eval(), tokenizer)


def _build_own(ckpt: dict, source: str, meta: _Meta, overrides: dict) -> LoadedModel:
    """Our own format carries config, labels and preprocessing; the sidecar/registry cannot be needed."""
    if ckpt.get("version") != OWN_VERSION:
        raise ValueError(f"{source}: unsupported {OWN_FORMAT} checkpoint version {ckpt.get('version')!r}! "
                         f"Expected {OWN_VERSION}.")
    missing = {"config", "labels", "preprocess", "model"} - set(ckpt)
    if missing:
        raise ValueError(f"{source}: {OWN_FORMAT} checkpoint without {sorted(missing)}!")
    arch = ckpt.get("arch", "vit")                     # "arch" is only written for a Swin or a video model
    config_class = {"swin": SwinConfig, "video": VideoConfig}.get(arch, ViTConfig)
    fields = dict(ckpt["config"])
    if "global_pool" in fields and arch == "vit":      # written before the readout had its own name (vit.readout)
        fields.setdefault("readout", from_timm(fields.pop("global_pool")))
    try:
        saved = config_class(**fields)
    except TypeError as e:  # a field this version of the code does not know
        if arch == "swin":
            raise ValueError(f"{source}: its config does not fit this version of vit.SwinConfig: {e}") from None
        if arch == "video":
            raise ValueError(f"{source}: its config does not fit this version of vit.VideoConfig: {e}") from None
        raise ValueError(f"{source}: its config does not fit this version of vit.ViTConfig: {e}") from None
    cfg = dataclasses.replace(saved, **overrides)
    state = ckpt["model"] if arch == "video" else _fit_pos_embed(ckpt["model"], cfg, saved.grid)
    name = (ckpt.get("extra") or {}).get("name") or meta.name
    preprocess = (VideoPreprocess if arch == "video" else Preprocess).from_dict(ckpt["preprocess"])
    meta = _Meta(name=name, config={}, labels=list(ckpt["labels"]), preprocess=preprocess)
    return _finish(state, cfg, source, meta, OWN_FORMAT, overrides, [], Origin("own", {}, meta.path))


def _fit_pos_embed(state: dict, cfg: ViTConfig, old_grid: tuple[int, int]) -> dict:
    """Resample the checkpoint's position embeddings when the model is built for another grid."""
    if "pos_embed" not in state or tuple(old_grid) == cfg.pos_grid:
        return state
    num_prefix = cfg.num_pos_prefix
    if cfg.pos_embed_kind == "sincos2d":  # a fixed table is computed for the new grid, not resized
        table = sincos_2d_position_embedding(cfg.grid, cfg.embed_dim)
        return {**state, "pos_embed": torch.cat([table.new_zeros(num_prefix, cfg.embed_dim), table]).unsqueeze(0)}
    return {**state, "pos_embed": resample_pos_embed(state["pos_embed"], num_prefix, cfg.grid, old_grid,
                                                     cfg.pos_embed_antialias)}


def _finish(state: dict, cfg: ViTConfig, source: str, meta: _Meta, fmt: str, overrides: dict,
            said: list[Assumption], origin: Origin | None = None) -> LoadedModel:
    with torch.device("meta"):  # no random init: every parameter comes from the checkpoint
        model = {SwinConfig: SwinTransformer, SamConfig: SamImageEncoder,
                 VideoConfig: VideoTransformer}.get(type(cfg), VisionTransformer)(cfg)
    state = {k: v.float().contiguous() if torch.is_floating_point(v) else v for k, v in state.items()}
    load_strict(model, state, source, assign=True)
    if any(t.is_meta for t in [*model.parameters(), *model.buffers()]):  # a tensor no checkpoint fills
        raise RuntimeError(f"{type(model).__name__} has tensors outside its state dict; they cannot be built on "
                           f"'meta'.")
    model.eval()
    labels = meta.labels if meta.labels is not None else default_labels(cfg.num_classes)
    if len(labels) != cfg.num_classes:
        raise ValueError(f"{source}: wrong number of labels! Expected {cfg.num_classes} (the head's outputs) "
                         f"but got {len(labels)}.")
    said = list(said)
    if meta.labels is None and cfg.num_classes == 1000:
        said.append(Assumption("labels"))
    preprocess = meta.preprocess
    if preprocess is None:
        preprocess, assumed = assumptions.default_preprocess(fmt, cfg)
        said.append(assumed)
    if "img_size" in overrides and preprocess.crop != cfg.img_size and isinstance(preprocess, Preprocess):
        preprocess = preprocess.at_size(cfg.img_size)
    return LoadedModel(model=model, preprocess=preprocess, labels=labels, name=meta.name, source=source,
                       config=cfg, format=fmt, assumptions=said, origin=origin)

