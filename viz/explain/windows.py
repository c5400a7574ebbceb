"""A Swin's class maps from arrays: GAE and rollout through windows and merges, Grad-CAM on the last stage, the
average pool's attention in the last block. Every formula takes an ``ExplainArrays`` whose ``windows`` the Swin
passes filled and returns a map over stage 0's tokens (gh0, gw0), the patch grid the trust curves perturb.

A map read on a coarser stage (Grad-CAM's and the attention map's, on the last stage) comes down to the patch grid as
rollout carries rows down: each token's value shared equally by the patches it covers (the merge's adjoint,
``vit.architecture.share_down``), so ``vit.architecture.sum_up`` recovers it on its own grid exactly. The definitions
through the hierarchy are in ``viz.maps.windows``' docstring and docs/swin.md.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vit.architecture import share_down

from ..maps import windows as hierarchy
from ..maps.source import rollout_rows
from .arrays import ExplainArrays
from .gradcam import gradcam_values


@dataclass(frozen=True)
class WindowArrays:
    """What the Swin passes produced for one image (numpy, float32)."""
    layouts: list                             # per block, first first: vit.swin.WindowLayout (grid, window, shift…)
    attention: list | None = None             # per block: (nW, H, N, N) window attention
    attention_grad: list | None = None        # per block: (nW, H, N, N) ∂score/∂attention
    tokens: np.ndarray | None = None          # (gh, gw, C) the last block's norm1 output (Grad-CAM's activation)
    tokens_grad: np.ndarray | None = None     # (gh, gw, C) ∂score/∂tokens

    def need(self, *names: str) -> tuple:
        missing = [n for n in names if getattr(self, n) is None]
        if missing:
            raise ValueError(f"This formula needs {', '.join(missing)}, which the Swin pass did not provide!")
        return tuple(getattr(self, n) for n in names)


def _windows(arrays: ExplainArrays) -> WindowArrays:
    if arrays.windows is None:
        raise ValueError("This formula reads a Swin's window attention, which no Swin pass provided!")
    return arrays.windows


def windows_gae_map(arrays: ExplainArrays) -> np.ndarray:
    """GAE through windows and merges -> (gh0, gw0) (``viz.maps.windows.gae_map``)."""
    w = _windows(arrays)
    attention, grad = w.need("attention", "attention_grad")
    return hierarchy.gae_map(attention, grad, w.layouts)


def windows_rollout_map(arrays: ExplainArrays) -> np.ndarray:
    """Attention rollout through windows and merges, heads averaged, read by the mean of the last block's tokens
    -> (gh0, gw0) (``viz.maps.source.rollout_rows`` over the pass's ``WindowedAttention``)."""
    w = _windows(arrays)
    (attention,) = w.need("attention")
    source = hierarchy.WindowedAttention(attention, w.layouts)
    return rollout_rows(source, hierarchy.mean_row(tuple(w.layouts[-1].grid))).reshape(tuple(w.layouts[0].grid))


def windows_attention_map(arrays: ExplainArrays) -> np.ndarray:
    """The average pool's attention in the last block (mean of the last stage's query rows, heads averaged), shared
    down to the patch grid -> (gh0, gw0)."""
    w = _windows(arrays)
    (attention,) = w.need("attention")
    last = w.layouts[-1]
    pool = hierarchy.rows_through(hierarchy.mean_row(tuple(last.grid)), hierarchy.fuse_windows(attention[-1]), last)
    return share_down(pool, tuple(last.grid), tuple(arrays.grid)).reshape(tuple(arrays.grid))


def windows_gradcam_values(tokens: np.ndarray, tokens_grad: np.ndarray) -> np.ndarray:
    """Grad-CAM on the last stage: (gh, gw, C) activation and gradient -> (gh, gw), as ``gradcam_values`` defines it
    (channel weights the mean gradient over the tokens, ReLU of the weighted sum; no prefix tokens)."""
    tokens, tokens_grad = np.asarray(tokens, dtype=np.float32), np.asarray(tokens_grad, dtype=np.float32)
    gh, gw, C = tokens.shape
    return gradcam_values(tokens.reshape(gh * gw, C), tokens_grad.reshape(gh * gw, C), 0, (gh, gw))


def windows_gradcam_map(arrays: ExplainArrays) -> np.ndarray:
    """Grad-CAM on the last block's norm1 tokens (pytorch-grad-cam's Swin recipe), shared down -> (gh0, gw0)."""
    w = _windows(arrays)
    tokens, grad = w.need("tokens", "tokens_grad")
    values = windows_gradcam_values(tokens, grad).reshape(-1)
    return share_down(values, tuple(tokens.shape[:2]), tuple(arrays.grid)).reshape(tuple(arrays.grid))
