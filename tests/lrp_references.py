"""lxt (AttnLRP's authors' package) made usable in a test, and how its heatmaps are compared with ours: lxt's
efficient module importable with transformers 5, its patch maps applied and undone, pixel relevance summed per
patch, closeness relative to the reference's largest value."""
from __future__ import annotations

import sys
import types
from contextlib import contextmanager

import torch

LRP_TOL = 1e-5       # max |ours - lxt| relative to max |lxt| (float32; measured up to 1.1e-6 AttnLRP, 4.6e-7 CP-LRP)


def per_patch(heatmap: torch.Tensor, patch: int) -> torch.Tensor:
    """(H, W) pixel relevance -> (N,) summed over each P×P patch, row-major."""
    H, W = heatmap.shape
    return heatmap.reshape(H // patch, patch, W // patch, patch).sum(dim=(1, 3)).reshape(-1)


def lxt_efficient():
    """lxt.efficient, importable with transformers 5: lxt 2.1's package import pulls in its BERT patches, which
    import ``find_pruneable_heads_and_indices`` (removed in transformers 5). Only that module is replaced by
    an empty stub (no BERT here); every rule, patch and wrapper used below is lxt's own code."""
    try:
        import lxt.efficient as efficient
    except ImportError:
        stub = types.ModuleType("lxt.efficient.models.bert")
        stub.modeling_bert, stub.attnLRP = types.ModuleType("transformers_bert_unavailable"), {}
        sys.modules["lxt.efficient.models.bert"] = stub
        import lxt.efficient as efficient
    return efficient


_MISSING = object()


@contextmanager
def lxt_patched(patch_map: dict):
    """Apply a patch map with ``lxt.efficient.monkey_patch``, and undo it afterwards: lxt patches classes and
    modules process-wide (torch.nn.LayerNorm, GELU, MultiheadAttention), which would change every model."""
    efficient = lxt_efficient()
    names = ("forward", "original_forward", "eager_attention_forward")
    saved = [(t, n, vars(t).get(n, _MISSING)) for t in patch_map for n in names]
    efficient.monkey_patch(None, patch_map)
    try:
        yield
    finally:
        for target, name, value in saved:
            if value is _MISSING:
                if name in vars(target):
                    delattr(target, name)
            else:
                setattr(target, name, value)


def assert_close_relative(ours: torch.Tensor, ref: torch.Tensor, tol: float) -> float:
    err = float((ours - ref).abs().max() / ref.abs().max())
    assert err <= tol, f"max |ours - reference| = {err:.2e} of max |reference|"
    return err
