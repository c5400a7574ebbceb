"""Every load checked against its own library: the library's model of the same file (``references``) and ours run
one fixed image (a video model: one fixed clip), and their outputs and last blocks' attention are compared.

    verified       checked against timm 1.0.31: Δ 3e-07 (output), Δ 1e-08 (attention)
    unverified     the user asked not to check (``vit.load(..., verify=False)``, ``--no-verify``)
    not verified   no library model could be made, with the reason (timm is not installed, …)

A difference beyond float32 tolerance (``OUTPUT_TOL`` of the output's scale, ``ATTENTION_TOL`` on probabilities)
refuses the load, with both numbers and the likely cause. The check costs the library's model build (on the meta
device where the library allows: no initialisation) and one forward of each model on one image at the model's own
input size (ours fused but for the last block, whose attention is written out; a video model's on a clip of its own
frame count and size, ours fused, its last step's attention recomputed from that step's queries and keys); a
process keeps each file's result (``CACHE``, by the files' identity and the load's arguments), so loading the same
unchanged file again costs nothing more.
"""
from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal

import torch

from ..model import VisionTransformer
from ..readout import kind as readout_kind
from ..video import READOUT_OF_POOL, VideoConfig, VideoTransformer, step_attention
from .references import LIBRARY_OF_FORMAT, WHY_UNBUILT, Origin, Unbuilt, installed, reference

OUTPUT_TOL = 1e-4         # max |Δ output| / max |library's output|: float32 through a deep network, any CPU
ATTENTION_TOL = 1e-4      # max |Δ attention| (probabilities)
CHECK_SEED = 0
CACHE_SIZE = 256



@dataclass(frozen=True)
class Verification:
    """What the load's check found (``LoadedModel.verified``)."""
    status: Literal["verified", "unverified", "not_verified"]
    library: str = ""                     # "timm", "transformers", "open_clip", "torchvision"
    version: str = ""
    output_delta: float | None = None     # max |ours − library's| of the output
    attention_delta: float | None = None  # max |ours − library's| of the last block's attention
    key: str = ""                         # not verified: why (``references.WHY_UNBUILT``)
    fields: dict = field(default_factory=dict)

    @property
    def reason(self) -> str:
        return WHY_UNBUILT[self.key].format(**self.fields) if self.key else ""

    def __str__(self) -> str:
        """The model line's words: "checked against timm 1.0.31: Δ 3e-07", "unverified", "not verified (…)"."""
        if self.status == "verified":
            return f"checked against {self.library} {self.version}: Δ {self.delta_text}"
        return "unverified" if self.status == "unverified" else f"not verified ({self.reason})"

    @property
    def delta(self) -> float:
        """The larger of the two differences (what the model line prints)."""
        return max(self.output_delta or 0.0, self.attention_delta or 0.0)

    @property
    def delta_text(self) -> str:
        """``delta`` to one digit: "3e-7", "0"."""
        return "0" if self.delta == 0 else f"{self.delta:.0e}".replace("e-0", "e-").replace("e+0", "e+")

    def to_dict(self) -> dict:
        """result.json's "verified": {"status", "library", "version", "output_delta", "attention_delta", "reason"}."""
        return {"status": self.status, "library": self.library, "version": self.version,
                "output_delta": self.output_delta, "attention_delta": self.attention_delta, "reason": self.reason}


UNVERIFIED = Verification("unverified")
CACHE: OrderedDict[tuple, Verification] = OrderedDict()


def check(model, cfg, origin: Origin, source: str, overrides: dict, assumed=()) -> Verification:
    """Run the library's model of ``origin`` and ours (``model``, eval mode) on the fixed image; the Verification,
    or ValueError when they differ beyond float32 tolerance (with both numbers and the likely cause)."""
    library = LIBRARY_OF_FORMAT.get(origin.format, "")
    key = _identity(origin, overrides, library)
    if key is not None and key in CACHE:
        CACHE.move_to_end(key)
        return CACHE[key]
    made = reference(origin, cfg)
    if isinstance(made, Unbuilt):
        result = Verification("not_verified", library, installed(library) or "" if library else "", key=made.key,
                              fields=dict(made.fields))
    else:
        result = _compare(model, cfg, made, source, overrides, assumed)
    if key is not None:
        CACHE[key] = result
        while len(CACHE) > CACHE_SIZE:
            CACHE.popitem(last=False)
    return result


def check_image(cfg) -> torch.Tensor:
    """The fixed image (1, C, H, W) both models see: seeded normal pixels at the model's own input size (about the
    range of a normalised photo); a video model's fixed clip (1, F, C, H, W) at its own frame count and size."""
    frames = (cfg.num_frames,) if isinstance(cfg, VideoConfig) else ()
    return torch.randn(1, *frames, cfg.in_chans, *cfg.img_size, generator=torch.Generator().manual_seed(CHECK_SEED))


def _compare(model, cfg, made, source: str, overrides: dict, assumed) -> Verification:
    x = check_image(cfg)
    output, last = _ours(model, x)
    theirs, attention = made.run(x)
    out_delta = _delta(output, theirs)
    attention_delta = None if attention is None else _delta(last, attention)
    scale = float(theirs.abs().max()) if theirs.numel() else 0.0
    result = Verification("verified", made.library, made.version, out_delta, attention_delta)
    if out_delta <= OUTPUT_TOL * max(scale, 1e-6) and (attention_delta or 0.0) <= ATTENTION_TOL:
        return result
    attention = attention_delta if attention_delta is not None else float("nan")
    raise ValueError(
        f"{source} does not open as the model {made.library} {made.version} makes of the same file: on the same "
        f"{'clip' if isinstance(cfg, VideoConfig) else 'image'} the outputs differ by {out_delta:.2g} (of {scale:.2g}) "
        f"and the last block's attention by {attention:.2g} (float32 tolerance: {OUTPUT_TOL:g} of the output, "
        f"{ATTENTION_TOL:g} of the attention). {_likely_cause(cfg, attention_delta, overrides, assumed)} Give what differs as the file is, "
        f"or, to look at it as it was given, unchecked: vit.load(..., verify=False), or --no-verify for python app.py "
        f"and python -m viz.")


def _ours(model, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Our output and last block's attention: a ViT's blocks run fused but the last, whose softmax is written out
    (the capture's own step); a video model's steps fused, its last step's attention recomputed from the queries and
    keys it kept (on its layout: (B, G, H, n, n)); a Swin's or SAM's capture as it is."""
    with torch.no_grad():
        if isinstance(model, VideoTransformer):
            for step in model.steps(x, keep="qk"):
                pass
            return model.forward_head(step.tokens), step_attention(step.q, step.k, model.attention_scale)
        if isinstance(model, VisionTransformer):
            positions = model.token_positions(x.shape[-2], x.shape[-1], x.device)
            x = model.embed(x)
            for blk in model.blocks[:-1]:
                x, _ = blk(x, False, positions)
            x, maps = model.blocks[-1](x, True, positions)
            return model.forward_head(x), maps
        ours = model.forward_with_attention(x)
    return ours.output, ours.attention[-1]     # a Swin's and SAM's: a list per block


def _delta(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    """max |ours − theirs|; the library's maps may stack windows or heads into the batch (timm's SAM: (B·nW·H, N, N)),
    in the same order: read in ours' shape."""
    if tuple(ours.shape) != tuple(theirs.shape) and ours.numel() == theirs.numel() and \
            ours.shape[-2:] == theirs.shape[-2:]:
        theirs = theirs.reshape(ours.shape)
    if tuple(ours.shape) != tuple(theirs.shape):
        return float("inf")
    return float((ours.float() - theirs.float()).abs().max()) if ours.numel() else 0.0


def _likely_cause(cfg, attention_delta: float, overrides: dict, assumed) -> str:
    """A sentence on where the difference starts, what was given and what the loader assumed rather than read."""
    if attention_delta is not None and attention_delta > ATTENTION_TOL:
        where = ("The blocks already differ: the heads, the norms (their eps, before or after each branch), the "
                 "position embedding or the rotation are not the library's.")
    else:
        readout = getattr(cfg, "readout", None) or READOUT_OF_POOL[cfg.global_pool]      # a video config: its pool
        where = (f"The blocks agree, so what reads them out differs: the readout ({readout_kind(readout).description}"
                 f"), the final norm or the head.")
    given = ", ".join(f"{k}={v!r}" for k, v in overrides.items())
    listed = " ".join(str(a) for a in assumed)
    return where + (f" Given to the loader: {given}." if given else "") + \
        (f" The loader assumed: {listed}" if listed else "")


def _identity(origin: Origin, overrides: dict, library: str) -> tuple | None:
    """The files the model came from (path, size, modification time, inode) and the load's arguments, or None where
    there is no file to name (a download held in memory)."""
    path = origin.path
    if path is None or not path.exists():
        return None
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else \
        [p for p in (path, path.with_suffix(".json")) if p.is_file()]
    stats = tuple((str(p.resolve()), s.st_size, s.st_mtime_ns, s.st_ino) for p in files for s in [os.stat(p)])
    version = (installed(library) or "") if library else ""          # no library: the format's own reason
    return stats, tuple(sorted((k, repr(v)) for k, v in overrides.items())), library, version

