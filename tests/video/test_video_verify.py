"""Protects the claim that every video load is checked against its own library, as a photo load is: transformers'
own classifier made from the same folder (``from_pretrained``) and ours run one fixed clip at the model's own frame
count and size, and their logits and the last step's attention (TimeSformer: its last space step; V-JEPA 2: its last
probe block) are compared; the model line says "checked against transformers 5.x: Δ …", result.json says "verified",
and a load whose mapping is wrong is refused with both numbers (a swap of two tensors in the loader's renaming, which
the strict load cannot see: the same names and shapes)."""
from __future__ import annotations

import json
import re
from fractions import Fraction

import numpy as np
import pytest
import transformers

import vit
import vit.checkpoints.load as load_module
from video_references import FAMILIES, reference
from viz.cli import main

TOLERANCE = 1e-5       # both differences of a right mapping: float32 rounding through two small networks


@pytest.mark.parametrize("frames", (4, 8))
@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_is_checked_against_transformers(family, frames, tmp_path):
    reference(family, "wide" if frames == 8 else "small", frames).save_pretrained(tmp_path / family)
    verified = vit.load(tmp_path / family).verified
    assert (verified.status, verified.library, verified.version) == ("verified", "transformers",
                                                                    transformers.__version__)
    assert verified.output_delta <= TOLERANCE and verified.attention_delta <= TOLERANCE, verified
    assert str(verified) == f"checked against transformers {transformers.__version__}: Δ {verified.delta_text}"
    assert verified.to_dict()["status"] == "verified"


def test_another_frame_count_is_said_not_checked(tmp_path):
    """A load asked for another frame count than the folder's (VideoMAE's positions extend to it) opens, said as not
    checked: transformers' model is checked at the folder's own frame count and size."""
    reference("videomae", "small", 4).save_pretrained(tmp_path / "videomae")
    verified = vit.load(tmp_path / "videomae", num_frames=8).verified
    assert (verified.status, verified.key) == ("not_verified", "resized"), verified
    assert str(verified) == "not verified (transformers is checked at the file's own input size, and this load asked " \
                            "for another)"


def swap_two_tensors(monkeypatch, first: str, second: str) -> None:
    """The loader's renaming with two tensors of the same shape exchanged: a wrong mapping the strict load takes."""
    rename = load_module.video_filter_fn

    def swapped(state, fmt):
        out = rename(state, fmt)
        out[first], out[second] = out[second], out[first]
        return out
    monkeypatch.setattr(load_module, "video_filter_fn", swapped)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_wrong_mapping_is_refused_with_both_numbers(family, tmp_path, monkeypatch):
    reference(family, "small", 4).save_pretrained(tmp_path / family)
    swap_two_tensors(monkeypatch, "blocks.0.norm1.weight", "blocks.1.norm1.weight")
    with pytest.raises(ValueError) as refused:
        vit.load(tmp_path / family)
    said = str(refused.value)
    found = re.search(r"on the same clip the outputs differ by (\S+) \(of (\S+)\) and the last block's attention by "
                      r"(\S+) \(float32 tolerance", said)
    assert found, said
    output, scale, attention = (float(x) for x in found.groups())
    assert output > 1e-4 * scale or attention > 1e-4, said      # V-JEPA 2's probe attention barely moves: its logits do
    assert "transformers" in said and "--no-verify" in said
    assert vit.load(tmp_path / family, verify=False).verified.status == "unverified"   # opened as asked, unchecked


def write_clip(path, frames: int = 8, size: int = 48) -> None:
    """A short H.264 clip of seeded noise (PyAV)."""
    import av
    rng = np.random.default_rng(0)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = size, size, "yuv420p"
        stream.time_base = Fraction(1, 25)
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8), format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def test_the_command_line_says_the_check(tmp_path, capsys):
    """``python -m viz VIDEO``: the first line says the check, result.json's "verified" records it."""
    folder = tmp_path / "videomae"
    reference("videomae", "small", 4).save_pretrained(folder)
    write_clip(tmp_path / "clip.mp4")
    capsys.readouterr()                                     # save_pretrained's own progress bar
    assert main([str(tmp_path / "clip.mp4"), "--weights", str(folder), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    first = capsys.readouterr().err.split("\n", 1)[0]
    assert re.fullmatch(rf"{re.escape(str(folder))}: checked against transformers "
                        rf"{re.escape(transformers.__version__)}: Δ \S+", first), first
    verified = json.loads((tmp_path / "out" / "clip" / "result.json").read_text())["verified"]
    assert verified["status"] == "verified" and verified["library"] == "transformers"
    assert verified["output_delta"] <= TOLERANCE and verified["attention_delta"] <= TOLERANCE
