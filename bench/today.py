"""The pipeline people assemble today, measured as the baseline of bench/run.py.

Pillow decode and the Hugging Face ``ViTImageProcessor``; Hugging Face ``transformers`` ViT with
``output_attentions=True`` (eager attention: under SDPA the attentions come back as None); attention
rollout written the way vit-explain writes it (per layer: fuse heads, discard, ``(A + I) / 2``, divide by
``a.sum(dim=-1)`` — without keepdim, so it divides columns, not rows — multiply into the running
product); mean attention distance as the keras-io ViT-representations example computes it; and one
pyplot figure per panel saved to PNG. The position-similarity figure does not depend on the photo, so it
is timed apart (``render_position``) and left out of the per-photo total, as our app renders it once per
model. Bench-only: nothing in the product imports this module.
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


def distance_matrix_like_keras_io(patch_size: int, num_patches: int, length: int) -> np.ndarray:
    """Pixel distance between every pair of patches, with keras-io's double loop (computed once, untimed)."""
    distance = np.zeros((num_patches, num_patches))
    for i in range(num_patches):
        for j in range(num_patches):
            if i == j:
                continue
            xi, yi = int(i / length), i % length
            xj, yj = int(j / length), j % length
            distance[i, j] = patch_size * np.linalg.norm([xi - xj, yi - yj])
    return distance


def mean_distance_like_keras_io(attn: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """(L, H, T, T) attention -> (L, H) mean attention distance (CLS row and column dropped)."""
    weights = attn[..., 1:, 1:]
    return (weights * distance[None, None]).sum(axis=-1).mean(axis=-1)


def _save(fig) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def render_panels_with_pyplot(image: np.ndarray, attn: np.ndarray, rollout: np.ndarray, mean_dist: np.ndarray,
                              norms: np.ndarray) -> list[bytes]:
    """The per-photo panels of our analysis, one pyplot figure each (attn: (L, H, T, T), image: (h, w, 3) uint8)."""
    plt = _pyplot()
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
    pngs.append(overlay(attn[-1].mean(0)[1 + g * g // 2, 1:].reshape(g, g)))  # a patch query: its row
    pngs.append(overlay(attn[-1].mean(0)[1:, 1 + g * g // 2].reshape(g, g)))  # and its column
    fig, axes = plt.subplots(L, H, figsize=(H, L))                 # the all-heads grid
    for i in range(L):
        for j in range(H):
            axes[i, j].imshow(attn[i, j, 0, 1:].reshape(g, g), cmap="viridis")
            axes[i, j].axis("off")
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


def render_position_with_pyplot(pos_sim: np.ndarray) -> bytes:
    """Position-embedding similarity (N, N) as one small image per patch (Figure 7 centre), one pyplot figure."""
    plt = _pyplot()
    g = int(round(pos_sim.shape[0] ** 0.5))
    fig, axes = plt.subplots(g, g, figsize=(8, 8))
    for k in range(g * g):
        axes[k // g, k % g].imshow(pos_sim[k].reshape(g, g), vmin=-1, vmax=1)
        axes[k // g, k % g].axis("off")
    return _save(fig)


class TodayPipeline:
    """Photo file -> classification and every panel, today's way. ``pipeline(path)`` runs it once and appends
    the seconds of each stage to ``pipeline.stages``; ``render_position()`` is the per-model figure."""

    STAGES = ("decode + preprocess", "forward", "rollout", "mean distance", "render panels")

    def __init__(self):
        from transformers import ViTImageProcessor

        self.model = build_hf_vit_b16()
        self.processor = ViTImageProcessor()
        cfg = self.model.config
        g = cfg.image_size // cfg.patch_size
        self.distance = distance_matrix_like_keras_io(cfg.patch_size, g * g, g)
        self.stages: dict[str, list[float]] = {s: [] for s in self.STAGES}

    def __call__(self, path: str) -> None:
        from PIL import Image

        t = [time.perf_counter()]
        image = Image.open(path).convert("RGB")
        pixel_values = self.processor(images=image, return_tensors="pt")["pixel_values"]
        t.append(time.perf_counter())
        with torch.no_grad():
            out = self.model(pixel_values=pixel_values, output_attentions=True, output_hidden_states=True)
        probabilities = out.logits.softmax(-1)[0]
        t.append(time.perf_counter())
        mask = rollout_like_vit_explain(out.attentions)
        t.append(time.perf_counter())
        attn = torch.cat(out.attentions).numpy()                                   # (L, H, T, T)
        mean_dist = mean_distance_like_keras_io(attn, self.distance)
        t.append(time.perf_counter())
        norms = torch.stack(out.hidden_states[1:])[:, 0].norm(dim=-1).numpy()      # (L, T)
        shown = np.asarray(image.resize((224, 224)))
        render_panels_with_pyplot(shown, attn, mask, mean_dist, norms)
        probabilities.topk(5)
        t.append(time.perf_counter())
        for stage, t0, t1 in zip(self.STAGES, t, t[1:]):
            self.stages[stage].append(t1 - t0)

    def position_similarity(self) -> np.ndarray:
        pos = self.model.vit.embeddings.position_embeddings[0, 1:].detach()
        pos = torch.nn.functional.normalize(pos, dim=-1)
        return (pos @ pos.T).numpy()

    def render_position(self) -> bytes:
        return render_position_with_pyplot(self.position_similarity())
