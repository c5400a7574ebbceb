"""Helpers for the robustness tests that talk to a served app through gradio_client, as an API user does."""
from __future__ import annotations

import numpy as np
from gradio_client import Client, handle_file
from PIL import Image

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
CAT_CLASSES = {"Egyptian cat", "tabby", "tiger cat", "Persian cat", "Siamese cat", "lynx"}
# /analyze returns (top-5 label, summary, rollout, attention, heads, query photo, query row, query column,
# position, distance, norms, norm curves, architecture, filters); the session state stays on the server.
QUERY_PHOTO = 5


def analyze(client: Client, photo: str, **inputs):
    return client.predict(handle_file(str(photo)), api_name="/analyze", **inputs)


def top5(result) -> list[tuple[str, float]]:
    """(label, probability) of the five classes, most probable first."""
    return [(c["label"], c["confidence"]) for c in result[0]["confidences"]]


def model_input(result, size: tuple[int, int] = (224, 224)) -> np.ndarray:
    """The photo as the model saw it, (H, W, 3) int: the Patch query tab's picture (shown enlarged for
    clicking) brought back to the model's input ``size`` (W, H)."""
    picture = Image.open(result[QUERY_PHOTO]).convert("RGB")
    if picture.size != size:
        picture = picture.resize(size, Image.Resampling.BOX)
    return np.asarray(picture).astype(int)


def difference_outside_query_frame(got: np.ndarray, expected: np.ndarray, grid: int = 14) -> float:
    """Mean absolute pixel difference, leaving out the green frame drawn around the grid's centre patch."""
    assert got.shape == expected.shape, f"model input {got.shape} but expected {expected.shape}"
    H, W = got.shape[:2]
    keep = np.ones((H, W), bool)
    ph, pw = H // grid, W // grid
    cy, cx = (grid // 2) * ph, (grid // 2) * pw
    keep[cy - 4:cy + ph + 4, cx - 4:cx + pw + 4] = False
    return float(np.abs(got - expected.astype(int))[keep].mean())
