"""The pipeline people assemble today, measured as the baseline of bench/run.py.

Hugging Face ``transformers`` ViT with ``output_attentions=True`` (eager attention: under SDPA the
attentions come back as None), attention rollout written the way vit-explain writes it (per layer:
fuse heads, discard, ``(A + I) / 2``, divide by ``a.sum(dim=-1)`` — without keepdim, so it divides
columns, not rows — multiply into the running product), and one pyplot figure per panel saved to PNG.
Bench-only: nothing in the product imports this module.
"""
from __future__ import annotations

import io
import time

import numpy as np
import torch


def build_hf_vit_b16() -> torch.nn.Module:
    """A randomly initialised ``ViTForImageClassification`` of ViT-B/16 size (weights do not change timings)."""
    from transformers import ViTConfig, ViTForImageClassification

    cfg = ViTConfig(num_labels=1000, attn_implementation="eager")
    return ViTForImageClassification(cfg).eval()


def rollout_like_vit_explain(attentions, discard_ratio: float = 0.9, head_fusion: str = "mean") -> np.ndarray:
    """attentions: sequence of (1, H, T, T) tensors -> (g, g) map normalised to max 1, as vit-explain computes it."""
    result = torch.eye(attentions[0].size(-1))
    for attention in attentions:
        if head_fusion == "mean":
            fused = attention.mean(dim=1)
        elif head_fusion == "max":
            fused = attention.max(dim=1).values
        else:
            fused = attention.min(dim=1).values
        flat = fused.view(fused.size(0), -1)
        _, indices = flat.topk(int(flat.size(-1) * discard_ratio), -1, False)
        indices = indices[indices != 0]
        flat[0, indices] = 0
        identity = torch.eye(fused.size(-1))
        a = (fused + identity) / 2
        a = a / a.sum(dim=-1)
        result = torch.matmul(a, result)
    mask = result[0, 0, 1:]
    width = int(mask.size(-1) ** 0.5)
    mask = mask.reshape(width, width).numpy()
    return mask / np.max(mask)


def _save(fig) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def render_panels_with_pyplot(image: np.ndarray, attn: np.ndarray, rollout: np.ndarray, pos_sim: np.ndarray,
                              mean_dist: np.ndarray, norms: np.ndarray) -> list[bytes]:
    """The same panels as our analysis, one pyplot figure each (attn: (L, H, T, T) numpy, image: (h, w, 3) uint8)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    L, H, T, _ = attn.shape
    g = int(round((T - 1) ** 0.5))
    pngs = []

    def overlay(heat):
        fig = plt.figure(figsize=(4, 4))
        plt.imshow(image)
        plt.imshow(heat, cmap="jet", alpha=0.5, extent=(0, image.shape[1], image.shape[0], 0), interpolation="bilinear")
        plt.axis("off")
        return _save(fig)

    pngs.append(overlay(rollout))                                  # rollout overlay
    pngs.append(overlay(attn[-1].mean(0)[0, 1:].reshape(g, g)))    # CLS attention, last layer
    pngs.append(overlay(attn[-1].mean(0)[1 + g * g // 2, 1:].reshape(g, g)))  # a patch query
    fig, axes = plt.subplots(L, H, figsize=(H, L))                 # the all-heads grid
    for i in range(L):
        for j in range(H):
            axes[i, j].imshow(attn[i, j, 0, 1:].reshape(g, g), cmap="viridis")
            axes[i, j].axis("off")
    pngs.append(_save(fig))
    fig, axes = plt.subplots(g, g, figsize=(8, 8))                 # position-embedding similarity
    for k in range(g * g):
        axes[k // g, k % g].imshow(pos_sim[k].reshape(g, g), vmin=-1, vmax=1)
        axes[k // g, k % g].axis("off")
    pngs.append(_save(fig))
    fig = plt.figure(figsize=(5, 4))                               # mean attention distance
    for h in range(H):
        plt.scatter(np.arange(L), mean_dist[:, h], s=8)
    plt.xlabel("layer")
    plt.ylabel("mean attention distance (px)")
    pngs.append(_save(fig))
    fig = plt.figure(figsize=(5, 4))                               # token norms
    plt.imshow(norms[-1, 1:].reshape(g, g))
    plt.colorbar()
    pngs.append(_save(fig))
    return pngs


def time_today(pixel_values: torch.Tensor, image: np.ndarray, repeats: int = 3) -> dict[str, float]:
    """Seconds for each stage of today's pipeline on one (1, 3, 224, 224) input, best of ``repeats``."""
    model = build_hf_vit_b16()
    best = {"forward": float("inf"), "rollout": float("inf"), "render": float("inf")}
    for _ in range(repeats):
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model(pixel_values=pixel_values, output_attentions=True, output_hidden_states=True)
        t1 = time.perf_counter()
        mask = rollout_like_vit_explain(out.attentions)
        t2 = time.perf_counter()
        attn = torch.cat(out.attentions).numpy()                                   # (L, H, T, T)
        norms = torch.stack(out.hidden_states[1:])[:, 0].norm(dim=-1).numpy()      # (L, T)
        pos = model.vit.embeddings.position_embeddings[0, 1:].detach()
        pos = torch.nn.functional.normalize(pos, dim=-1)
        pos_sim = (pos @ pos.T).numpy()
        mean_dist = np.zeros(attn.shape[:2])
        render_panels_with_pyplot(image, attn, mask, pos_sim, mean_dist, norms)
        t3 = time.perf_counter()
        for key, value in (("forward", t1 - t0), ("rollout", t2 - t1), ("render", t3 - t2)):
            best[key] = min(best[key], value)
    return best
