"""Protects "every refusal says what to do, and doing it works": every refusal ``vit/checkpoints`` can raise is
collected from its source, and for each one a case below makes a checkpoint (or a call) that meets it, checks the
message, then does what the message says (the file it expects, the field it names, the login it asks for) and checks
the result: a model equal to its reference (max |ours - reference| <= 1e-4 of the reference's largest value) or
another clear refusal. A refusal without a case fails ``test_every_refusal_has_a_case``, as does a case whose refusal
is gone.
"""
from __future__ import annotations

import ast
import json
import os
import re
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import timm
import torch
import transformers
from safetensors.torch import save_file
from timm.layers import resample_abs_pos_embed
from torchvision.models import vision_transformer as tv

import vit
from canaries import FifoCanary
from hub_cache import FakeHub, offline_hub, online_hub
from reference_models import (assert_close, assert_same_as_timm, google_npz_arrays, images, meta_dinov3_layout,
                              open_clip_tiny, randomize_)
from vit.checkpoints import formats, identity
from vit.checkpoints.pipelines import huggingface_preprocess

CHECKPOINTS = Path(vit.__file__).parent / "checkpoints"
# Raises that no file or call a person makes can reach: invariants of the code itself.
INTERNAL = {"has tensors outside its state dict",
            "Unknown Swin format",          # swin_filter_fn only ever gets a format detect_swin found
            "Cannot infer a Swin config: no patch embedding",   # detect_swin found one, every filter keeps it
            "infer.py:checkpoint_grid",   # infer_config has refused such a grid before checkpoint_grid runs
            "Unknown video format",       # video_filter_fn only ever gets a format detect_video found
            "unsupported video model_type"}   # huggingface_video_config is only called for the video types
CASES: dict[str, tuple[tuple[str, ...], object]] = {}


def case(*keys: str):
    """Register a case for the refusals whose message template contains one of ``keys`` (or, for a message made at
    run time, the raise site "file.py:function")."""
    def register(fn):
        CASES[fn.__name__] = (keys, fn)
        return fn
    return register


# --- collecting the refusals -------------------------------------------------------------------------------------

def _template(node) -> str | None:
    """A message's literal text with "{}" for each formatted value; None for one made at run time."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _template(node.left), _template(node.right)
        return None if left is None or right is None else left + right
    return None


def refusals() -> list[tuple[str, str]]:
    """(raise site "file.py:function", message template or the site itself) for every raise in vit/checkpoints."""
    found = []
    for path in sorted(CHECKPOINTS.glob("*.py")):
        tree = ast.parse(path.read_text())
        for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                    site = f"{path.name}:{fn.name}"
                    text = _template(node.exc.args[0]) if node.exc.args else None
                    literal = re.sub(r"\{\}|\W", "", text or "")
                    found.append((site, text if len(literal) >= 12 else site))
    return found


def test_every_refusal_has_a_case():
    keys = [k for ks, _ in CASES.values() for k in ks]
    missing = [(site, t) for site, t in refusals()
               if not any(i in t for i in INTERNAL) and not any(k == t or (k != site and k in t) for k in keys)]
    assert not missing, "refusals without a case: " + "; ".join(f"{s}: {t[:80]}" for s, t in missing)
    templates = [t for _, t in refusals()]
    stale = [k for k in keys if not any(k == t or k in t for t in templates)]
    assert not stale, f"cases for refusals that no longer exist: {stale}"


# --- what the cases share --------------------------------------------------------------------------------------

def small_timm(**kw):
    """A 2-block timm ViT on 32×32 (2×2 patches of 16), 3 heads (what 64 dims per head gives its width 192)."""
    torch.manual_seed(0)
    return randomize_(timm.create_model("vit_tiny_patch16_224", depth=2, img_size=kw.pop("img_size", 32),
                                        num_classes=kw.pop("num_classes", 4), **kw))


def same_as(loaded: vit.LoadedModel, reference, size=(32, 32), call=None) -> None:
    x = images(2, size)
    with torch.no_grad():
        assert_close(loaded.model(x), (call or reference)(x))


def write_safetensors(model, path: Path) -> Path:
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
    return path


# --- reading files -----------------------------------------------------------------------------------------------

@case("is not a checkpoint! Expected a safetensors file")
def not_a_checkpoint(tmp_path, monkeypatch):
    (tmp_path / "model.pt").write_text("my notes on the model")
    with pytest.raises(ValueError, match="is not a checkpoint! Expected a safetensors file"):
        vit.load(tmp_path / "model.pt")
    ref = small_timm()   # advice: a safetensors file, a torch file or a Google .npz
    same_as(vit.load(write_safetensors(ref, tmp_path / "model.safetensors")), ref)


@case("not a file! Expected the path of a checkpoint", "not a file on disk! Expected the path of a checkpoint")
def not_a_file(tmp_path, monkeypatch):
    """A FIFO, a device or a /proc file where a checkpoint was expected: refused before it is opened. Advice: the
    path of the checkpoint file itself."""
    ref = small_timm()
    with FifoCanary(tmp_path / "model.pt") as fifo:
        with pytest.raises(ValueError, match="it is a FIFO"):
            vit.load(fifo.path)
        assert not fifo.opened.is_set()
    (tmp_path / "status.pt").symlink_to("/proc/self/status")
    with pytest.raises(ValueError, match="one of the system's pseudo files"):
        vit.load(tmp_path / "status.pt")
    same_as(vit.load(write_safetensors(ref, tmp_path / "model.safetensors")), ref)


@case("the file is empty (0 bytes)")
def empty_file(tmp_path, monkeypatch):
    ref = small_timm()
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match="the file is empty"):
        vit.load(tmp_path / "model.safetensors")
    same_as(vit.load(write_safetensors(ref, tmp_path / "model.safetensors")), ref)   # saved again


@case("more than weights can be compressed from")
def compressed_beyond_weights(tmp_path, monkeypatch):
    """A compressed .npz whose members declare more than 8 times its size (+16 MB): here a zeroed head of 100,000
    classes (77 MB that deflate to almost nothing, beside 3 MB of weights). Advice: save the arrays uncompressed."""
    ref = small_timm(num_classes=100_000)
    with torch.no_grad():
        ref.head.weight.zero_()
    arrays = google_npz_arrays(ref)
    np.savez_compressed(tmp_path / "packed.npz", **arrays)
    with pytest.raises(ValueError, match="refused before anything was decompressed.*numpy.savez"):
        vit.load(tmp_path / "packed.npz")
    np.savez(tmp_path / "plain.npz", **arrays)
    same_as(vit.load(tmp_path / "plain.npz"), ref)


@case("is a damaged zip archive (truncated download?)")
def truncated_zip(tmp_path, monkeypatch):
    ref = small_timm()
    torch.save(ref.state_dict(), tmp_path / "full.pt")
    data = (tmp_path / "full.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="is a damaged zip archive"):
        vit.load(tmp_path / "cut.pt")
    same_as(vit.load(tmp_path / "full.pt"), ref)   # the whole download


@case("is a damaged safetensors file (truncated download?)")
def truncated_safetensors(tmp_path, monkeypatch):
    ref = small_timm()
    data = write_safetensors(ref, tmp_path / "full.safetensors").read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[: len(data) - 100])
    with pytest.raises(ValueError, match="is a damaged safetensors file"):
        vit.load(tmp_path / "cut.safetensors")
    same_as(vit.load(tmp_path / "full.safetensors"), ref)


@case("is a damaged .npz file (truncated download?)", "it holds pickled Python objects, not plain arrays")
def npz_damaged_or_pickled(tmp_path, monkeypatch):
    torch.manual_seed(0)
    ref = randomize_(timm.models.vision_transformer.VisionTransformer(
        img_size=32, patch_size=16, embed_dim=64, depth=2, num_heads=2, num_classes=3))
    arrays = google_npz_arrays(ref)
    np.savez(tmp_path / "full.npz", **arrays)
    with zipfile.ZipFile(tmp_path / "full.npz") as z, zipfile.ZipFile(tmp_path / "cut.npz", "w") as out:
        for name in z.namelist():
            out.writestr(name, z.read(name)[:100])   # every array's header, none of its numbers
    with pytest.raises(ValueError, match=r"is a damaged \.npz file"):
        vit.load(tmp_path / "cut.npz")
    np.savez(tmp_path / "objects.npz", **{**arrays, "cls": np.array([object()], dtype=object)})
    with pytest.raises(ValueError, match="Refusing to load .*pickled Python objects, not plain arrays"):
        vit.load(tmp_path / "objects.npz")
    same_as(vit.load(tmp_path / "full.npz"), ref)   # plain arrays, all of them


@case("it is a TorchScript archive")
def torchscript(tmp_path, monkeypatch):
    """Advice: torch.save(torch.jit.load(path).state_dict(), 'clip_state_dict.pt'), where the file is trusted."""
    ref = open_clip_tiny()
    x, text = images(1, (64, 64)), torch.zeros(1, 77, dtype=torch.long)
    with warnings.catch_warnings():   # TorchScript is deprecated: the archives people have are older than that
        warnings.simplefilter("ignore")
        torch.jit.save(torch.jit.trace(ref, (x, text), strict=False, check_trace=False), str(tmp_path / "ViT.pt"))
    with pytest.raises(ValueError, match=r"TorchScript archive.*torch\.jit\.load\(path\)\.state_dict\(\)"):
        vit.load(tmp_path / "ViT.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save(torch.jit.load(str(tmp_path / "ViT.pt")).state_dict(), tmp_path / "clip_state_dict.pt")
    same_as(vit.load(tmp_path / "clip_state_dict.pt"), ref, (64, 64), ref.encode_image)


@case("not a checkpoint! Expected a dict of tensors (a state dict)")
def not_a_dict(tmp_path, monkeypatch):
    ref = small_timm()
    torch.save(list(ref.state_dict().values()), tmp_path / "tensors.pt")
    with pytest.raises(ValueError, match="holds a list, not a checkpoint! Expected a dict of tensors"):
        vit.load(tmp_path / "tensors.pt")
    torch.save(ref.state_dict(), tmp_path / "state.pt")
    same_as(vit.load(tmp_path / "state.pt"), ref)


class Payload:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)


@case("it is a pickle that holds Python objects other than tensors", "is not a readable torch checkpoint")
def pickles(tmp_path, monkeypatch):
    """Advice: re-save the state dict with torch.save(model.state_dict(), ...) or as safetensors."""
    ref = small_timm()
    torch.save({"model": ref.state_dict(), "hook": Payload(tmp_path / "ran")}, tmp_path / "evil.pth")
    with pytest.raises(ValueError, match="could run code.*torch.save\\(model.state_dict\\(\\)"):
        vit.load(tmp_path / "evil.pth")
    assert not (tmp_path / "ran").exists()
    torch.save(ref.state_dict(), tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    data = (tmp_path / "legacy.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"is not a readable torch checkpoint \(damaged or truncated\?\)"):
        vit.load(tmp_path / "cut.pt")
    torch.save(ref.state_dict(), tmp_path / "resaved.pth")
    same_as(vit.load(tmp_path / "resaved.pth"), ref)
    same_as(vit.load(tmp_path / "legacy.pt"), ref)


@case("Wrong number of labels! Expected {} (the model's classes)", "extra must hold only tensors")
def saving_our_format(tmp_path, monkeypatch):
    model = vit.VisionTransformer(vit.variant("tiny", depth=1, img_size=32, num_classes=3)).eval()
    with pytest.raises(ValueError, match=r"Wrong number of labels! Expected 3 .* but got 2"):
        vit.save_checkpoint(tmp_path / "m.pt", model, ["a", "b"], vit.Preprocess())
    with pytest.raises(ValueError, match="extra must hold only tensors"):
        vit.save_checkpoint(tmp_path / "m.pt", model, ["a", "b", "c"], vit.Preprocess(), extra={"p": vit.Preprocess()})
    path = vit.save_checkpoint(tmp_path / "m.pt", model, ["a", "b", "c"], vit.Preprocess(), extra={"epochs": 3})
    same_as(vit.load(path), model)


# --- recognising and reading the tensors ---------------------------------------------------------------------------

@case("Not a Google ViT .npz: no 'embedding/kernel' array.",
      "Google .npz without attention query kernels: cannot tell the number of heads.")
def google_npz_keys(tmp_path, monkeypatch):
    torch.manual_seed(0)
    ref = randomize_(timm.models.vision_transformer.VisionTransformer(
        img_size=32, patch_size=16, embed_dim=64, depth=2, num_heads=2, num_classes=3))
    arrays = google_npz_arrays(ref)
    np.savez(tmp_path / "nested.npz", **{f"model/{k}": v for k, v in arrays.items()})
    with pytest.raises(ValueError, match="no 'embedding/kernel' array"):
        vit.load(tmp_path / "nested.npz")
    np.savez(tmp_path / "embedding_only.npz", **{k: v for k, v in arrays.items() if "Attention" not in k})
    with pytest.raises(ValueError, match="without attention query kernels"):
        vit.load(tmp_path / "embedding_only.npz")
    np.savez(tmp_path / "vit_jax.npz", **{f"params/{k}": v for k, v in arrays.items()})   # big_vision's prefix
    same_as(vit.load(tmp_path / "vit_jax.npz"), ref)


@case("Unknown checkpoint format! Expected the keys of a torchvision, timm")
def unknown_keys(tmp_path, monkeypatch):
    torch.save({"fc.weight": torch.zeros(2, 2), "conv1.weight": torch.zeros(2, 3, 3, 3)}, tmp_path / "resnet.pt")
    with pytest.raises(ValueError, match=r"Unknown checkpoint format!.*got: fc\.weight, conv1\.weight"):
        vit.load(tmp_path / "resnet.pt")
    ref = small_timm()   # the keys of a timm ViT
    same_as(vit.load(write_safetensors(ref, tmp_path / "vit.safetensors")), ref)


@case("Unknown format {}! Expected one of {}.")
def unknown_format_name(tmp_path, monkeypatch):
    ref = small_timm()
    path = write_safetensors(ref, tmp_path / "m.safetensors")
    (tmp_path / "m.json").write_text(json.dumps({"format": "timm-v2"}))
    with pytest.raises(ValueError, match=r"Unknown format 'timm-v2'! Expected one of \[.*'timm'"):
        vit.load(path)
    (tmp_path / "m.json").write_text(json.dumps({"format": "timm"}))
    same_as(vit.load(path), ref)


@case("formats.py:load_strict")
def strict_loading(tmp_path, monkeypatch):
    """The mismatch is listed key by key; the sidecar that caused it, corrected, gives the reference."""
    ref = small_timm()
    path = write_safetensors(ref, tmp_path / "m.safetensors")
    (tmp_path / "m.json").write_text(json.dumps({"variant": "vit_s_16"}))
    with pytest.raises(ValueError, match=r"(?s)does not match the model.*shape conflicts.*patch_embed\.proj\.weight: "
                                         r"checkpoint \(192, 3, 16, 16\) vs model \(384, 3, 16, 16\)"):
        vit.load(path)
    (tmp_path / "m.json").write_text(json.dumps({"config": {"num_heads": 3}}))   # what the file is, not ViT-S/16
    same_as(vit.load(path), ref)


@case("Cannot resample {} position embeddings: not a square grid. Give the checkpoint's img_size")
def resample_without_grid(tmp_path, monkeypatch):
    table = torch.randn(1, 1 + 2 * 3, 8, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="not a square grid. Give the checkpoint's img_size"):
        formats.resample_pos_embed(table, 1, (4, 6))
    torch.testing.assert_close(formats.resample_pos_embed(table, 1, (4, 6), old_grid=(2, 3), antialias=True),
                               resample_abs_pos_embed(table, (4, 6), (2, 3), num_prefix_tokens=1))


# --- the config --------------------------------------------------------------------------------------------------

@case("Cannot infer the image size from {} position embeddings (not a square grid", "infer.py:_pos_embed_fields")
def non_square_grid(tmp_path, monkeypatch):
    """Advice: pass img_size=(H, W), e.g. in a sidecar JSON."""
    ref = small_timm(img_size=(32, 48))
    path = write_safetensors(ref, tmp_path / "wide.safetensors")
    with pytest.raises(ValueError, match=r"Cannot infer the image size from 7 position embeddings.*Pass img_size"):
        vit.load(path)
    with pytest.raises(ValueError, match=r"6 patch position embeddings, which is not a square grid and not the 2×2 "
                                         r"grid of img_size \(32, 32\).*Pass the img_size it was trained at"):
        vit.load(path, img_size=(32, 32))
    same_as(vit.load(path, img_size=(32, 48)), ref, (32, 48))
    (tmp_path / "wide.json").write_text(json.dumps({"config": {"img_size": [32, 48]}}))
    same_as(vit.load(path), ref, (32, 48))


@case("the checkpoint has neither position embeddings (pos_embed) nor a relative position bias table")
def no_positions(tmp_path, monkeypatch):
    """Advice: a RoPE ViT opens by its Hub name or folder (another refusal here until its family is known); only a
    ViT trained without position information opens with img_size and pos_embed_kind='none'."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_tiny_patch16_224", depth=2, img_size=32, num_classes=4, pos_embed="none"))
    path = write_safetensors(ref, tmp_path / "nopos.safetensors")
    for given in ({}, {"img_size": (32, 32)}):
        with pytest.raises(ValueError, match=r"neither position embeddings.*RoPE ViT.*pos_embed_kind='none'"):
            vit.load(path, **given)
    same_as(vit.load(path, img_size=(32, 32), pos_embed_kind="none"), ref)


@case("Cannot infer a ViT config: no patch embedding (patch_embed.proj.weight)")
def wrong_format_named(tmp_path, monkeypatch):
    """A torchvision file a sidecar calls timm's: the named format's keys are missing; the right format (or none:
    it is recognised) gives torchvision's model."""
    torch.manual_seed(0)
    ref = randomize_(tv.VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=2, hidden_dim=64,
                                          mlp_dim=96, num_classes=3))
    torch.save(ref.state_dict(), tmp_path / "tv.pth")
    (tmp_path / "tv.json").write_text(json.dumps({"format": "timm", "config": {"num_heads": 2}}))
    with pytest.raises(ValueError, match=r"no patch embedding \(patch_embed\.proj\.weight\)"):
        vit.load(tmp_path / "tv.pth")
    (tmp_path / "tv.json").write_text(json.dumps({"format": "torchvision", "config": {"num_heads": 2}}))
    same_as(vit.load(tmp_path / "tv.pth"), ref)


@case("Only square patches are supported!", "the checkpoint has no transformer blocks (blocks.N.*)")
def shapes_this_model_cannot_have(tmp_path, monkeypatch):
    """Another clear refusal: no advice to follow, the shape is not a ViT this explorer builds."""
    sd = small_timm().state_dict()
    save_file({**sd, "patch_embed.proj.weight": torch.zeros(192, 3, 16, 8)}, str(tmp_path / "rect.safetensors"))
    with pytest.raises(ValueError, match="Only square patches are supported! Got a 16×8 patch embedding"):
        vit.load(tmp_path / "rect.safetensors")
    save_file({k: v for k, v in sd.items() if not k.startswith("blocks.")}, str(tmp_path / "stem.safetensors"))
    with pytest.raises(ValueError, match=r"no transformer blocks \(blocks\.N\.\*\)"):
        vit.load(tmp_path / "stem.safetensors")


@case("Unknown config fields {}! Expected some of {}.")
def unknown_config_field(tmp_path, monkeypatch):
    ref = small_timm()
    path = write_safetensors(ref, tmp_path / "m.safetensors")
    with pytest.raises(ValueError, match=r"Unknown config fields \['heads'\]! Expected some of .*'num_heads'"):
        vit.load(path, heads=3)
    same_as(vit.load(path, num_heads=3), ref)


# --- where checkpoints come from ---------------------------------------------------------------------------------

@case("No checkpoint {}: it is not an existing path", "Empty checkpoint source! Expected a path")
def nothing_there(tmp_path, monkeypatch):
    """Advice: put the file in weights/ or pass its path."""
    monkeypatch.setenv("VIT_WEIGHTS_DIR", str(tmp_path / "weights"))
    (tmp_path / "weights").mkdir()
    with pytest.raises(FileNotFoundError, match=r"No checkpoint 'mine\.safetensors'.*Put the file in"):
        vit.load("mine.safetensors")
    with pytest.raises(ValueError, match="Empty checkpoint source"):
        vit.load(" ")
    ref = small_timm()
    write_safetensors(ref, tmp_path / "weights" / "mine.safetensors")
    same_as(vit.load("mine.safetensors"), ref)
    same_as(vit.load(tmp_path / "weights" / "mine.safetensors"), ref)


def _torchvision_small():
    torch.manual_seed(0)
    return randomize_(tv.VisionTransformer(image_size=224, patch_size=16, num_layers=1, num_heads=1, hidden_dim=64,
                                           mlp_dim=64, num_classes=1000))


@case("is not available offline. Looked for:", "The download of {} is not the published file")
def known_checkpoint_offline(tmp_path, monkeypatch):
    """Advice: download the URL and save it as weights/<file>; a download whose hash differs is refused."""
    monkeypatch.setenv("VIT_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv("VIT_OFFLINE", "1")
    with pytest.raises(FileNotFoundError, match=r"not available offline.*Download https://download\.pytorch\.org/"
                                                r"models/vit_b_16-c867db91\.pth and save it as"):
        vit.load("vit_b_16")
    monkeypatch.delenv("VIT_OFFLINE")

    def substituted(url, **kwargs):
        raise RuntimeError('invalid hash value (expected "c867db91", got "00000000")')
    monkeypatch.setattr("torch.hub.load_state_dict_from_url", substituted)
    with pytest.raises(ValueError, match="is not the published file"):
        vit.load("vit_b_16")
    ref = _torchvision_small()
    (tmp_path / "weights").mkdir()
    torch.save(ref.state_dict(), tmp_path / "weights" / "vit_b_16-c867db91.pth")
    same_as(vit.load("vit_b_16", num_heads=1), ref, (224, 224))


@case("Unknown preprocessing {}! Expected one of {}.")
def unknown_preprocessing_choice(tmp_path, monkeypatch):
    ref = small_timm()
    path = write_safetensors(ref, tmp_path / "m.safetensors")
    with pytest.raises(ValueError, match=r"Unknown preprocessing 'stretch'! Expected one of \['own', 'crop', "
                                         r"'squash'\]"):
        vit.load(path, preprocess="stretch")
    assert vit.load(path, preprocess="squash").preprocess.resize_mode == "squash"


@case("hub.py:fetch")
def hub_names(tmp_path, monkeypatch):
    """Gated: accept the licence and log in (HF_TOKEN) -> it opens. Private or missing: log in -> it opens. No such
    revision: leave it out -> it opens. Not cached while offline: load it once online -> it opens offline too."""
    torch.manual_seed(0)
    ref = randomize_(transformers.Dinov2Model(transformers.Dinov2Config(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, patch_size=8, image_size=32)))
    ref.save_pretrained(tmp_path / "dinov2")
    call = lambda x: ref(pixel_values=x).pooler_output   # noqa: E731
    hub = FakeHub({"facebook/dinov3-gated": tmp_path / "dinov2", "someone/private": tmp_path / "dinov2",
                   "facebook/dinov2-small": tmp_path / "dinov2"},
                  gated={"facebook/dinov3-gated": "hf_granted"}, private={"someone/private": "hf_granted"})
    offline_hub(monkeypatch, tmp_path / "cache")
    with pytest.raises(FileNotFoundError, match="not in the Hugging Face cache.*Load it once with the network on"):
        vit.load("facebook/dinov2-small")
    online_hub(monkeypatch, tmp_path / "cache", hub)
    with pytest.raises(ValueError, match=r"gated repository.*accept its licence.*hf auth login.*HF_TOKEN"):
        vit.load("facebook/dinov3-gated")
    with pytest.raises(FileNotFoundError, match=r"not a model on the Hugging Face Hub \(if it is a private one, "
                                                r"log in"):
        vit.load("someone/private")
    with pytest.raises(FileNotFoundError, match=r"has no revision 'v9'.*Leave out @v9"):
        vit.load("facebook/dinov2-small@v9")
    same_as(vit.load("facebook/dinov2-small"), ref, call=call)
    monkeypatch.setenv("HF_TOKEN", "hf_granted")
    same_as(vit.load("facebook/dinov3-gated"), ref, call=call)
    same_as(vit.load("someone/private"), ref, call=call)
    offline_hub(monkeypatch, tmp_path / "cache")           # once downloaded, offline is enough
    same_as(vit.load("facebook/dinov2-small"), ref, call=call)


@case("No checkpoint file for {}: expected {} to exist.")
def fingerprint_of_a_moved_file(tmp_path, monkeypatch):
    ref = small_timm()
    path = write_safetensors(ref, tmp_path / "m.safetensors")
    loaded = vit.load(path)
    path.rename(tmp_path / "elsewhere.safetensors")
    with pytest.raises(FileNotFoundError, match="No checkpoint file for .*m.safetensors"):
        identity.fingerprint(loaded.source)
    (tmp_path / "elsewhere.safetensors").rename(path)   # the file back where it was loaded from
    assert identity.fingerprint(loaded.source).name == "m.safetensors"


# --- sidecars and our own format -----------------------------------------------------------------------------------

@case("Sidecar {} must be a JSON object with some of", "Sidecar {}: config and preprocess must be JSON objects.",
      "Sidecar {} is not valid JSON", "labels must be a list of strings or \"imagenet\"", "load.py:_apply_sidecar",
      "A preprocess naming its source holds that source's settings alone",
      "wrong number of labels! Expected {} (the head's outputs)")
def sidecars(tmp_path, monkeypatch):
    ref = small_timm(num_classes=1000)
    path = write_safetensors(ref, tmp_path / "m.safetensors")
    sidecar = tmp_path / "m.json"
    wrong = [("{not json", "is not valid JSON"),
             (json.dumps({"heads": 3}), "must be a JSON object with some of"),
             (json.dumps({"config": [3]}), "config and preprocess must be JSON objects"),
             (json.dumps({"labels": "imagenet-21k"}), 'labels must be a list of strings or "imagenet"'),
             (json.dumps({"labels": ["cat", "dog"]}), r"wrong number of labels! Expected 1000 .* but got 2"),
             (json.dumps({"preprocess": {"timm": {"crop_pct": 0.95}, "resize": 240}}),
              r"Sidecar .*m\.json: A preprocess naming its source holds that source's settings alone")]
    for text, message in wrong:
        sidecar.write_text(text)
        with pytest.raises(ValueError, match=message):
            vit.load(path)
    sidecar.write_text(json.dumps({"config": {"num_heads": 3}, "labels": "imagenet",
                                   "preprocess": {"timm": {"input_size": [3, 32, 32], "crop_pct": 0.95}}}))
    loaded = vit.load(path)
    assert loaded.labels[0] == "tench" and loaded.preprocess.resize == 33 and loaded.assumptions[0].key == "img_size"
    same_as(loaded, ref)


@case("checkpoint version {}! Expected {}.", "{}: {} checkpoint without {}!",
      "its config does not fit this version of vit.ViTConfig")
def own_format(tmp_path, monkeypatch):
    model = vit.VisionTransformer(vit.variant("tiny", depth=1, img_size=32, num_classes=2)).eval()
    path = vit.save_checkpoint(tmp_path / "m.pt", model, ["a", "b"], vit.Preprocess(resize=32, crop=(32, 32)))
    good = torch.load(path, weights_only=True)
    for change, message in (({"version": 99}, "unsupported vit-explorer checkpoint version 99! Expected 1"),
                            ({"labels": None}, r"checkpoint without \['labels'\]"),
                            ({"config": {**good["config"], "flash": True}}, "does not fit this version")):
        broken = {k: v for k, v in {**good, **change}.items() if v is not None}
        torch.save(broken, tmp_path / "broken.pt")
        with pytest.raises(ValueError, match=message):
            vit.load(tmp_path / "broken.pt")
    same_as(vit.load(path), model)   # the file as save_checkpoint wrote it


# --- Swin checkpoints -----------------------------------------------------------------------------------------

def _timm_swin(version: int, **kw):
    """A two-stage timm Swin on 32×32 (patch 4, windows of 4: an 8×8, then a 4×4 grid)."""
    torch.manual_seed(0)
    cls = timm.models.swin_transformer.SwinTransformer if version == 1 else \
        timm.models.swin_transformer_v2.SwinTransformerV2
    return randomize_(cls(img_size=32, patch_size=4, embed_dim=16, depths=(2, 2), num_heads=(1, 2), window_size=4,
                          num_classes=3, **kw))


@case("The window size of this Swin v2 is not in its tensors")
def swin_v2_window(tmp_path, monkeypatch):
    """Advice: the window it was trained with, in a sidecar JSON {"config": {"window_size": W}} (here the file's 4),
    or in the file's name as timm names its models; no number is given that the file does not say."""
    ref = _timm_swin(2)
    path = write_safetensors(ref, tmp_path / "swinv2.safetensors")
    with pytest.raises(ValueError, match=r'not in its tensors .* nor in its file\'s name.*\{"config": '
                                         r'\{"window_size": W\}\}'):
        vit.load(path)
    path.with_suffix(".json").write_text(json.dumps({"config": {"window_size": 4}}))
    same_as(vit.load(path), ref)
    named = write_safetensors(ref, tmp_path / "swinv2_small_window4_32.safetensors")   # a name that says it
    same_as(vit.load(named), ref)


@case("Cannot infer a Swin config: expected stages 0, 1, … of blocks")
def swin_stage_missing(tmp_path, monkeypatch):
    """A file missing a stage's blocks (a partial save): the whole state dict opens."""
    ref = _timm_swin(1)
    partial = {k: v for k, v in ref.state_dict().items() if not k.startswith("layers.1.blocks.")}
    partial = {k: v for k, v in partial.items() if not k.startswith("layers.1.")}
    save_file({k: v.contiguous() for k, v in {**partial, "layers.2.blocks.0.norm1.weight": torch.ones(32)}.items()},
              str(tmp_path / "partial.safetensors"))
    with pytest.raises(ValueError, match=r"expected stages 0, 1, … of blocks but found \[0, 2\]"):
        vit.load(tmp_path / "partial.safetensors")
    same_as(vit.load(write_safetensors(ref, tmp_path / "whole.safetensors")), ref)


@case("a Swin checkpoint, whose config does not take these fields", "does not fit this version of vit.SwinConfig")
def swin_config_fields(tmp_path, monkeypatch):
    """Advice: only SwinConfig's fields (a ViT's depth is not one); a file of this version opens."""
    ref = _timm_swin(1)
    path = write_safetensors(ref, tmp_path / "swin.safetensors")
    path.with_suffix(".json").write_text(json.dumps({"config": {"depth": 4}}))
    with pytest.raises(ValueError, match="whose config does not take these fields.*Give only vit.SwinConfig's fields"):
        vit.load(path)
    path.with_suffix(".json").write_text(json.dumps({"config": {"img_size": [32, 32]}}))
    loaded = vit.load(path)
    same_as(loaded, ref)
    own = vit.save_checkpoint(tmp_path / "own.pt", loaded.model, loaded.labels, loaded.preprocess)
    good = torch.load(own, weights_only=True)
    torch.save({**good, "config": {**good["config"], "flash": True}}, tmp_path / "future.pt")
    with pytest.raises(ValueError, match="does not fit this version of vit.SwinConfig"):
        vit.load(tmp_path / "future.pt")
    same_as(vit.load(own), ref)


# --- Hugging Face, timm and open_clip folders ---------------------------------------------------------------------

def _hf_vit(tmp_path, **kw):
    torch.manual_seed(0)
    ref = randomize_(transformers.ViTForImageClassification(transformers.ViTConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, image_size=32,
        patch_size=8, num_labels=3, **kw)))
    ref.save_pretrained(tmp_path / "hf")
    return ref, tmp_path / "hf", lambda x: ref(pixel_values=x).logits


@case("is a folder but not a Hugging Face model: no config.json", "no model.safetensors or pytorch_model.bin",
      "{} is not valid JSON: {}")
def folder_files(tmp_path, monkeypatch):
    ref, folder, call = _hf_vit(tmp_path)
    config = (folder / "config.json").read_text()
    weights = (folder / "model.safetensors").read_bytes()
    (folder / "config.json").unlink()
    with pytest.raises(ValueError, match="no config.json"):
        vit.load(folder)
    (folder / "config.json").write_text(config[:-5])
    with pytest.raises(ValueError, match="config.json is not valid JSON"):
        vit.load(folder)
    (folder / "config.json").write_text(config)
    (folder / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="no model.safetensors or pytorch_model.bin"):
        vit.load(folder)
    (folder / "model.safetensors").write_bytes(weights)
    same_as(vit.load(folder), ref, call=call)


@case("unsupported Hugging Face model_type", "hidden_act {} is not supported! Expected 'gelu' (exact GELU).",
      "hidden_act {} is not supported! Expected one of {}.", "a SigLIP image tower without its attention-pooling head")
def transformers_models_this_explorer_does_not_build(tmp_path, monkeypatch):
    """Another clear refusal each (no advice: another architecture); the family as transformers makes it opens."""
    ref, folder, call = _hf_vit(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    for change, message in (({"model_type": "convnext"}, r"unsupported Hugging Face model_type 'convnext'! Expected "
                                                         r"one of 'vit'.*'dinov2'"),
                            ({"hidden_act": "relu"}, r"hidden_act 'relu' is not supported! Expected 'gelu'")):
        (folder / "config.json").write_text(json.dumps({**config, **change}))
        with pytest.raises(ValueError, match=message):
            vit.load(folder)
    (folder / "config.json").write_text(json.dumps(config))
    same_as(vit.load(folder), ref, call=call)
    torch.manual_seed(0)
    siglip = randomize_(transformers.SiglipVisionModel(transformers.SiglipVisionConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, image_size=32,
        patch_size=8)))
    siglip.save_pretrained(tmp_path / "siglip")
    siglip_config = json.loads((tmp_path / "siglip" / "config.json").read_text())
    for change, message in (({"vision_use_head": False}, "without its attention-pooling head"),
                            ({"hidden_act": "relu"}, r"hidden_act 'relu' is not supported! Expected one of")):
        (tmp_path / "siglip" / "config.json").write_text(json.dumps({**siglip_config, **change}))
        with pytest.raises(ValueError, match=message):
            vit.load(tmp_path / "siglip")
    (tmp_path / "siglip" / "config.json").write_text(json.dumps(siglip_config))
    same_as(vit.load(tmp_path / "siglip"), siglip, call=lambda x: siglip(pixel_values=x).pooler_output)


@case("AIMv2's native-resolution tower (is_native true", "AIMv2 with hidden_act {} is not supported!")
def aimv2_variants_not_built(tmp_path, monkeypatch):
    """Another clear refusal each (a per-photo sine-cosine table; another MLP); AIMv2 as transformers makes it opens."""
    torch.manual_seed(0)
    ref = randomize_(transformers.Aimv2VisionModel(transformers.Aimv2VisionConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, image_size=32,
        patch_size=8, attn_implementation="eager")))
    ref.save_pretrained(tmp_path / "aimv2")
    config = json.loads((tmp_path / "aimv2" / "config.json").read_text())
    for change, message in (({"is_native": True}, "native-resolution tower .* Expected a learnt position table"),
                            ({"hidden_act": "gelu"}, r"hidden_act 'gelu' is not supported! Expected 'silu'")):
        (tmp_path / "aimv2" / "config.json").write_text(json.dumps({**config, **change}))
        with pytest.raises(ValueError, match=message):
            vit.load(tmp_path / "aimv2")
    (tmp_path / "aimv2" / "config.json").write_text(json.dumps(config))
    same_as(vit.load(tmp_path / "aimv2"), ref, call=lambda x: ref(pixel_values=x).pooler_output)


@case("huggingface.py:_processor", "names the image processor {}, whose preprocessing is not reproduced here",
      "preprocessor_config.json's {} {} is not supported!", "resample {} is not a PIL filter!",
      "asks for a centre crop (do_center_crop true) but gives no crop_size!",
      "resizes the shortest edge to {} without a centre crop")
def processor_settings(tmp_path, monkeypatch):
    ref, folder, call = _hf_vit(tmp_path)
    wrong = [({"image_processor_type": "ConvNextImageProcessor"}, "'ConvNextImageProcessor', whose preprocessing is "
                                                                   "not reproduced here! Expected one of"),
             ({"size": {"longest_edge": 32}}, r"size \{'longest_edge': 32\} is not supported!"),
             ({"resample": 7}, "resample 7 is not a PIL filter!"),
             ({"do_center_crop": True, "crop_size": None}, "gives no crop_size!"),
             ({"size": {"shortest_edge": 32}}, "resizes the shortest edge to 32 without a centre crop")]
    for settings, message in wrong:
        (folder / "preprocessor_config.json").write_text(json.dumps(settings))
        with pytest.raises(ValueError, match=message):
            vit.load(folder)
    (folder / "preprocessor_config.json").write_text(json.dumps(
        {"image_processor_type": "ViTImageProcessor", "size": {"shortest_edge": 36}, "do_center_crop": True,
         "crop_size": {"height": 32, "width": 32}, "resample": 3}))
    loaded = vit.load(folder)
    assert (loaded.preprocess.resize, loaded.preprocess.crop, loaded.preprocess.interpolation) == (36, (32, 32),
                                                                                                   "bicubic")
    same_as(loaded, ref, call=call)


@case("No image processor for model_type {}!")
def processor_of_another_model_type(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match=r"No image processor for model_type 'convnext'!.*or image_processor_type"):
        huggingface_preprocess({}, "convnext", (224, 224))
    prep = huggingface_preprocess({"image_processor_type": "ViTImageProcessor"}, "convnext", (224, 224))
    assert prep.resize == (224, 224) and prep.resize_mode == "squash"


@case("no {} beside open_clip_config.json.", "open_clip resize_mode {} is not supported!",
      "open_clip's image tower is timm's {}, which is not a ViT", "open_clip's timm_proj {}{} is not supported!",
      "open_clip's timm_pool {} is not supported!")
def open_clip_folders(tmp_path, monkeypatch):
    ref = open_clip_tiny(quick_gelu=False)
    folder = tmp_path / "oc"
    folder.mkdir()
    config = {"model_cfg": {"embed_dim": 16, "quick_gelu": False, "vision_cfg": {"image_size": 64, "width": 128,
                                                                                 "head_width": 64}},
              "preprocess_cfg": {"resize_mode": "shortest"}}
    (folder / "open_clip_config.json").write_text(json.dumps(config))
    with pytest.raises(FileNotFoundError, match="no open_clip_model.safetensors or open_clip_pytorch_model.bin"):
        vit.load(folder)
    write_safetensors(ref, folder / "open_clip_model.safetensors")
    (folder / "open_clip_config.json").write_text(json.dumps({**config, "preprocess_cfg": {"resize_mode": "pad"}}))
    with pytest.raises(ValueError, match="open_clip resize_mode 'pad' is not supported!"):
        vit.load(folder)
    (folder / "open_clip_config.json").write_text(json.dumps(config))
    same_as(vit.load(folder), ref, (64, 64), ref.encode_image)
    timm_tower = {"model_cfg": {"embed_dim": 128, "vision_cfg": {"image_size": 64, "timm_model_pretrained": False}}}
    for vision, message in (({"timm_model_name": "convnext_base"}, "timm's 'convnext_base', which is not a ViT"),
                            ({"timm_model_name": "vit_base_patch16_siglip_224", "timm_pool": "map",
                              "timm_proj": "mlp"}, "timm_proj 'mlp' is not supported!"),
                            ({"timm_model_name": "vit_base_patch16_siglip_224", "timm_pool": "abs_attn",
                              "timm_proj": "none"}, "timm_pool 'abs_attn' is not supported!")):
        timm_tower["model_cfg"]["vision_cfg"].update(vision)
        (folder / "open_clip_config.json").write_text(json.dumps(timm_tower))
        with pytest.raises(ValueError, match=message):
            vit.load(folder)


@case("the tokenizer has {} tokens but the text tower embeds only {}. Expected CLIP's vocabulary")
def text_tower_vocabulary(tmp_path, monkeypatch):
    """A CLIPModel folder whose text tower embeds fewer tokens than CLIP's tokenizer (and brings no tokenizer of
    its own) is refused; with CLIP's vocabulary it opens, both towers equal transformers'."""
    def clip_folder(vocab_size: int):
        torch.manual_seed(0)
        ref = randomize_(transformers.CLIPModel(transformers.CLIPConfig(
            vision_config=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                               image_size=32, patch_size=8),
            text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                             vocab_size=vocab_size), projection_dim=16)))
        ref.save_pretrained(tmp_path / str(vocab_size))
        return ref, tmp_path / str(vocab_size)
    _, small = clip_folder(1000)
    with pytest.raises(ValueError, match=r"the tokenizer has 49408 tokens but the text tower embeds only 1000"):
        vit.load(small)
    ref, full = clip_folder(49408)
    loaded = vit.load(full)
    same_as(loaded, ref, call=lambda x: ref.get_image_features(pixel_values=x).pooler_output)  # the projected embedding
    tokens = loaded.text.tokenizer(["a photo of a cat"])
    with torch.no_grad():
        assert_close(loaded.text.model(tokens), ref.get_text_features(input_ids=tokens).pooler_output)


# --- a named timm architecture, built by timm (vit/checkpoints/timm_library.py) ---------------------------------

def timm_folder(folder: Path, model, architecture: str, model_args: dict | None) -> Path:
    """A timm Hub folder: the weights and a config.json naming ``architecture`` (with ``model_args`` when given)."""
    folder.mkdir()
    write_safetensors(model, folder / "model.safetensors")
    (folder / "config.json").write_text(json.dumps({"architecture": architecture,
                                                    **({"model_args": model_args} if model_args else {})}))
    return folder


@case("The file names timm's {}, whose tokens are {} wide, but its tensors are {} wide:",
      "model_args must be a JSON object (timm.create_model's arguments)")
def named_but_made_otherwise(tmp_path, monkeypatch):
    """A folder naming timm's ViT-S/16 whose tensors are a shrunk one's: refused; advice: the arguments it was made
    with (as timm's save_for_hf records them), in the folder's config.json or a sidecar's "model_args"."""
    ref = small_timm()                                   # vit_tiny_patch16_224 at 32 px: 192 wide
    made = {"depth": 2, "img_size": 32, "num_classes": 4}
    folder = timm_folder(tmp_path / "hub", ref, "vit_small_patch16_224", None)
    with pytest.raises(ValueError, match=r"names timm's vit_small_patch16_224, whose tokens are 384 wide, but its "
                                         r"tensors are 192 wide.*model_args"):
        vit.load(folder)
    (folder / "config.json").write_text(json.dumps({"architecture": "vit_tiny_patch16_224", "model_args": made}))
    same_as(vit.load(folder), ref)
    path = write_safetensors(ref, tmp_path / "bare.safetensors")
    _sidecar(path, architecture="vit_tiny_patch16_224", model_args=[2])
    with pytest.raises(ValueError, match="model_args must be a JSON object"):
        vit.load(path)
    _sidecar(path, architecture="vit_tiny_patch16_224", model_args=made)
    same_as(vit.load(path), ref)


@case("does not open as the model {} {} makes of the same file: on the same {} the outputs differ by")
def checked_against_the_library(tmp_path, monkeypatch):
    """A BEiT-3 folder opened with another LayerNorm eps than timm's: timm's model of the same folder differs, and
    the load is refused with both numbers and what was given. Advice: give what the file is (nothing here: timm
    says it), which opens checked against timm; or, to look at it as given, verify=False, which says unverified."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("beit3_base_patch16_224", depth=2, img_size=32, num_classes=3))
    folder = timm_folder(tmp_path / "beit3", ref, "beit3_base_patch16_224", {"depth": 2, "img_size": 32})
    with pytest.raises(ValueError, match=r"does not open as the model timm [\d.]+ makes of the same file: on the same "
                                         r"image the outputs differ by [\d.e-]+ \(of [\d.e-]+\) and the last block's "
                                         r"attention by [\d.e-]+.*Given to the loader: layer_norm_eps=1e-06"):
        vit.load(folder, layer_norm_eps=1e-6)
    loaded = vit.load(folder)
    assert loaded.verified.status == "verified" and loaded.verified.library == "timm"
    same_as(loaded, ref)
    assert vit.load(folder, layer_norm_eps=1e-6, verify=False).verified.status == "unverified"


@case("(timm's {} with global_pool={})", "timm's MLP activation {} is not one this explorer builds!",
      "timm's gated MLP with {} is not one this explorer builds!", "timm's rotary embedding {} (in pixels",
      "which this explorer's ViT does not build: it cannot open it as the model it is.")
def named_with_what_is_not_built(tmp_path, monkeypatch):
    """Other clear refusals (no advice: timm makes another model than this explorer's ViT): a pooling that is not a
    readout, a SiLU MLP, a gated GELU MLP, a rotation over time as well, q/k norms; each named, with the arguments
    it was made with, in a timm Hub folder. Without those arguments the same tensors open as timm's model."""
    torch.manual_seed(0)
    for arch, args, message in (
            ("vit_small_patch16_224", {"global_pool": "avgmax"}, r"global_pool='avgmax' is not a readout"),
            ("vit_small_patch16_224", {"act_layer": "silu"}, "activation SiLU is not one this explorer builds"),
            ("vit_giant_patch14_dinov2", {"act_layer": "gelu", "embed_dim": 384, "num_heads": 6},
             "gated MLP with GELU is not one"),
            ("vit_small_patch16_rope_224", {"rope_type": "mrope", "rope_grid_indexing": "ij"},
             "RotaryEmbeddingMRope .* is not one this explorer builds"),
            ("vit_small_patch16_224", {"qk_norm": True}, r"normalises queries and keys \(qk_norm\)")):
        ref = randomize_(timm.create_model(arch, depth=1, img_size=32, num_classes=3, **args))
        folder = timm_folder(tmp_path / f"{len(list(tmp_path.iterdir()))}", ref, arch,
                             {"depth": 1, "img_size": 32, **args})
        with pytest.raises(ValueError, match=message):
            vit.load(folder)
    ref = randomize_(timm.create_model("vit_small_patch16_224", depth=1, img_size=32, num_classes=3))
    same_as(vit.load(timm_folder(tmp_path / "plain", ref, "vit_small_patch16_224", {"depth": 1, "img_size": 32})),
            ref)


# --- timm's relative-position, parallel-block and NaFlex ViTs, SigLIP 2's NaFlex tower ---------------------------

def timm_family(name: str, **kw):
    torch.manual_seed(0)
    return randomize_(timm.create_model(name, pretrained=False, depth=2, **kw), std=0.05)


@case("timm's relative-position MLP in Swin V2 mode")
def relpos_swin_mode(tmp_path, monkeypatch):
    """Another clear refusal (no advice: timm's relpos models use the 'cr' mode); that mode opens as timm's."""
    swin = timm_family("vit_relpos_small_patch16_224", rel_pos_type="mlp_swin", img_size=64)
    with pytest.raises(ValueError, match="Swin V2 mode.*'cr' mode"):
        vit.load(write_safetensors(swin, tmp_path / "swin.safetensors"))
    ref = timm_family("vit_relpos_small_patch16_224", img_size=64)
    same_as(vit.load(write_safetensors(ref, tmp_path / "cr.safetensors")), ref, (64, 64))


@case("The attention's qkv has {} rows, neither 3·D = {} nor 3·D times a number")
def qkv_of_no_known_width(tmp_path, monkeypatch):
    """A qkv whose rows are no multiple of 3·D (24 rows too many): refused; the real qkv opens."""
    ref = small_timm()
    state = {k: v.contiguous() for k, v in ref.state_dict().items()}
    cut = dict(state, **{f"blocks.{i}.attn.qkv.{p}": torch.cat([state[f"blocks.{i}.attn.qkv.{p}"],
                                                                 state[f"blocks.{i}.attn.qkv.{p}"][:24]])
                         for i in range(2) for p in ("weight", "bias")})
    save_file(cut, str(tmp_path / "cut.safetensors"))
    with pytest.raises(ValueError, match=r"qkv has 600 rows, neither 3·D = 576"):
        vit.load(tmp_path / "cut.safetensors")
    same_as(vit.load(write_safetensors(ref, tmp_path / "whole.safetensors")), ref)


@case("A NaFlexViT with factorized position embeddings", "A NaFlexViT without a final LayerNorm")
def naflex_layouts_not_built(tmp_path, monkeypatch):
    """Other clear refusals (no advice: another architecture); a NaFlexViT with a learned table and a final norm
    opens as timm's."""
    small = dict(embed_dim=192, num_heads=3)
    for name, message in (("naflexvit_base_patch16_parfac_gap", "factorized position embeddings"),
                          ("naflexvit_base_patch16_radio_v3", "without a final LayerNorm")):
        with pytest.raises(ValueError, match=message):
            vit.load(write_safetensors(timm_family(name, **small), tmp_path / f"{name}.safetensors"))
    ref = timm_family("naflexvit_base_patch16_map", **small)
    same_as(vit.load(write_safetensors(ref, tmp_path / "map.safetensors")), ref, (64, 96))


@case("This NaFlexViT has the tensors of both naflexvit_base_patch16_gap and naflexvit_base_patch16_par_gap")
def naflex_gap_or_par_gap(tmp_path, monkeypatch):
    """The advice: pos_embed_ar_preserving to vit.load, or in a sidecar JSON: each gives timm's model (non-square)."""
    for ar, name in ((True, "naflexvit_base_patch16_par_gap"), (False, "naflexvit_base_patch16_gap")):
        ref = timm_family(name, embed_dim=192, num_heads=3)
        path = write_safetensors(ref, tmp_path / f"{name}.safetensors")
        with pytest.raises(ValueError, match="give pos_embed_ar_preserving"):
            vit.load(path)
        same_as(vit.load(path, pos_embed_ar_preserving=ar), ref, (64, 112))
        path.with_suffix(".json").write_text(json.dumps({"config": {"pos_embed_ar_preserving": ar}}))
        same_as(vit.load(path), ref, (112, 48))


@case("The patch projection has {} inputs per patch, which is not P·P·3",
      "preprocessor_config.json turns the resize off (do_resize false)")
def siglip2_patches_and_processor(tmp_path, monkeypatch):
    """A one-channel SigLIP 2 tower (a Linear over P·P·1 values) is refused, the RGB tower opens; a NaFlex processor
    without its resize is refused, with it the folder opens (the photo's input equal to the processor's)."""
    def tower(channels: int):
        torch.manual_seed(0)
        return randomize_(transformers.Siglip2VisionModel(transformers.Siglip2VisionConfig(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, patch_size=8,
            num_patches=16, num_channels=channels)))
    tower(1).save_pretrained(tmp_path / "grey")
    with pytest.raises(ValueError, match="has 64 inputs per patch, which is not P·P·3"):
        vit.load(tmp_path / "grey")
    ref = tower(3)
    ref.save_pretrained(tmp_path / "rgb")
    (tmp_path / "rgb" / "preprocessor_config.json").write_text(json.dumps(
        {"image_processor_type": "Siglip2ImageProcessor", "patch_size": 8, "max_num_patches": 16, "do_resize": False}))
    with pytest.raises(ValueError, match=r"turns the resize off \(do_resize false\)"):
        vit.load(tmp_path / "rgb")
    (tmp_path / "rgb" / "preprocessor_config.json").write_text(json.dumps(
        {"image_processor_type": "Siglip2ImageProcessor", "patch_size": 8, "max_num_patches": 16, "do_resize": True}))
    loaded = vit.load(tmp_path / "rgb")
    assert loaded.preprocess.varies
    same_as(loaded, ref, (32, 32), call=lambda x: ref(
        pixel_values=x.unfold(2, 8, 8).unfold(3, 8, 8).permute(0, 2, 3, 4, 5, 1).reshape(x.shape[0], 16, 192),
        pixel_attention_mask=torch.ones(x.shape[0], 16, dtype=torch.long),
        spatial_shapes=torch.tensor([[4, 4]] * x.shape[0])).pooler_output)


# --- SAM's image encoder and open_clip's own towers -------------------------------------------------------------

def _samvit(**kw):
    torch.manual_seed(0)
    return randomize_(timm.create_model("samvit_base_patch16", depth=2, global_attn_indexes=[1], img_size=64,
                                        embed_dim=96, num_heads=2, window_size=3, **kw), std=0.05)


@case("This SAM image encoder has no relative-position tables", "Unknown SAM config fields {}! Expected some of {}.")
def sam_without_relative_positions(tmp_path, monkeypatch):
    """Advice: give window_size, global_blocks and num_heads (here in a sidecar's config), which opens timm's model;
    a field SAM's config does not have is named."""
    ref = _samvit(use_rel_pos=False)
    path = write_safetensors(ref, tmp_path / "samvit.safetensors")
    with pytest.raises(ValueError, match="no relative-position tables.*window_size, global_blocks and num_heads"):
        vit.load(path)
    with pytest.raises(ValueError, match=r"Unknown SAM config fields \['heads'\]"):
        vit.load(path, heads=2)
    _sidecar(path, config={"window_size": 3, "global_blocks": [1], "num_heads": 2, "layer_norm_eps": 1e-5})
    loaded = vit.load(path)
    assert loaded.verified.library == "timm"
    same_as(loaded, ref, (64, 64))


@case("open_clip's image tower pools by {}, not a readout this explorer draws!")
def open_clip_tower_pooling(tmp_path, monkeypatch):
    """Another clear refusal (CoCa's attention pooling, no pooling); the CLS token's opens as open_clip's."""
    ref = open_clip_tiny(quick_gelu=False)
    folder = tmp_path / "oc"
    folder.mkdir()
    write_safetensors(ref, folder / "open_clip_model.safetensors")
    vision = {"image_size": 64, "width": 128, "head_width": 64, "layers": 2, "patch_size": 16}
    text = {"context_length": 77, "vocab_size": 49408, "width": 128, "heads": 2, "layers": 2}
    for pooling, message in (({"pool_type": "none"}, "pools by 'none'"),
                             ({"attentional_pool": True}, "pools by attention")):
        (folder / "open_clip_config.json").write_text(json.dumps(
            {"model_cfg": {"embed_dim": 16, "vision_cfg": {**vision, **pooling}, "text_cfg": text}}))
        with pytest.raises(ValueError, match=message):
            vit.load(folder)
    (folder / "open_clip_config.json").write_text(json.dumps(
        {"model_cfg": {"embed_dim": 16, "vision_cfg": {**vision, "pool_type": "tok"}, "text_cfg": text}}))
    same_as(vit.load(folder), ref, (64, 64), ref.encode_image)


# --- the rotary families (vit/checkpoints/families.py) ---------------------------------------------------------

def _sidecar(path: Path, **fields) -> None:
    path.with_suffix(".json").write_text(json.dumps(fields))


@case("families.py:identify")
def rope_vit_or_deit3(tmp_path, monkeypatch):
    """timm's vit_*_patch16_rope_ape_224 has DeiT III's tensors exactly (EVA-style LayerScale, a table of the patches
    only, a key bias): loaded as a plain ViT it would run without its rotation, so it is refused until named."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_small_patch16_rope_ape_224", depth=2, num_classes=5))
    path = write_safetensors(ref, tmp_path / "model.safetensors")
    with pytest.raises(ValueError, match=r"DeiT III .* RoPE-ViT .*\"architecture\": \"deit3_small_patch16_224\" or "
                                         r"\"vit_small_patch16_rope_ape_224\""):
        vit.load(path)
    _sidecar(path, architecture="vit_small_patch16_rope_ape_224.naver_in1k")     # the advice, followed
    loaded = vit.load(path)
    assert loaded.config.family == "rope_vit" and loaded.config.rope_axes == "xy"
    assert_same_as_timm(loaded, ref, (224, 224))
    _sidecar(path, architecture="deit3_small_patch16_224")                      # or: it is DeiT III
    plain = vit.load(path)
    assert not plain.config.rope and plain.config.layer_scale and not plain.config.pos_embed_prefix


@case("families.py:identify")
def eva_layout_without_positions(tmp_path, monkeypatch):
    """A DINOv3 without registers (no timm model, but a DINOv3 all the same) has no position tensor and none of the
    features that tell the rotary families apart; named, it opens with DINOv3's rotation."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_small_patch16_dinov3", depth=2, num_reg_tokens=0))
    path = write_safetensors(ref, tmp_path / "model.safetensors")
    with pytest.raises(ValueError, match=r"holds no position information .* settings are not in the file\. .*"
                                         r"\"architecture\".*pos_embed_kind='none'"):
        vit.load(path)
    _sidecar(path, architecture="vit_small_patch16_dinov3")
    loaded = vit.load(path)
    assert loaded.config.family == "dinov3" and loaded.config.num_reg_tokens == 0
    assert_same_as_timm(loaded, ref, (256, 256))


def _meta_dinov3_file(tmp_path, **changes) -> Path:
    """A DINOv3 ViT-S/16 (one block) in Meta's layout, with ``changes`` to its tensors."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_small_patch16_dinov3_qkvb", depth=1, global_pool="token"))
    torch.save({**meta_dinov3_layout(ref.state_dict(), heads=6), **changes}, tmp_path / "model.pth")
    return tmp_path / "model.pth"


@case("are not DINOv3's base-100 schedule", "holds NaN: the file was saved before its key-bias mask was set")
def meta_dinov3_rotation_we_do_not_reproduce(tmp_path, monkeypatch):
    """Another clear refusal: the file's rotation is not DINOv3's (timm's and transformers'), or its mask unset."""
    other_base = (1000.0 ** (2 * torch.arange(16) / 32)).to(torch.bfloat16)      # 64-wide heads, base 1000
    with pytest.raises(ValueError, match="not DINOv3's base-100 schedule"):
        vit.load(_meta_dinov3_file(tmp_path, **{"rope_embed.periods": other_base}))
    with pytest.raises(ValueError, match="bias_mask holds NaN"):
        vit.load(_meta_dinov3_file(tmp_path, **{"blocks.0.attn.qkv.bias_mask": torch.full((1152,), float("nan"))}))


@case("is not supported! Expected the published models' biases.", "a query bias without a value bias",
      "a gated MLP with hidden_act")
def transformers_dinov3_without_its_biases(tmp_path, monkeypatch):
    """Another clear refusal: transformers' DINOv3 options no published model uses."""
    small = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4, image_size=32,
                 patch_size=16)
    for i, (options, message) in enumerate([(dict(proj_bias=False), "without proj biases"),
                                            (dict(value_bias=False), "a query bias without a value bias"),
                                            (dict(use_gated_mlp=True, hidden_act="gelu"), "hidden_act 'gelu'")]):
        transformers.DINOv3ViTModel(transformers.DINOv3ViTConfig(**small, **options)).save_pretrained(tmp_path / str(i))
        with pytest.raises(ValueError, match=message):
            vit.load(tmp_path / str(i))


# --- video models ------------------------------------------------------------------------------------------------

def _hf_video(tmp_path, family: str = "videomae"):
    from video_references import reference
    ref = reference(family, "small", 4)
    ref.save_pretrained(tmp_path / family)
    key = "pixel_values_videos" if family == "vjepa2" else "pixel_values"
    return ref, tmp_path / family, lambda x: ref(**{key: x}).logits


def same_video(loaded: vit.LoadedModel, call) -> None:
    from video_references import clips
    x = clips(2, 4, 32)
    with torch.no_grad():
        assert_close(loaded.model(x), call(x))


@case("video model's tensors without its config.json", "a video checkpoint, whose config does not take these fields",
      "does not fit this version of vit.VideoConfig")
def video_files(tmp_path, monkeypatch):
    ref, folder, call = _hf_video(tmp_path)
    torch.save(ref.state_dict(), tmp_path / "bare.pt")
    with pytest.raises(ValueError, match="video model's tensors without its config.json! Open the folder"):
        vit.load(tmp_path / "bare.pt")
    same_video(vit.load(folder), call)
    with pytest.raises(ValueError, match="whose config does not take these fields.*Give only vit.VideoConfig's"):
        vit.load(folder, rope=True)
    same_video(vit.load(folder, drop_rate=0.0), call)
    loaded = vit.load(folder)
    vit.save_checkpoint(tmp_path / "own.pt", loaded.model, loaded.labels, loaded.preprocess)
    own = torch.load(tmp_path / "own.pt", weights_only=True)
    torch.save({**own, "config": {**own["config"], "flash": True}}, tmp_path / "newer.pt")
    with pytest.raises(ValueError, match="does not fit this version of vit.VideoConfig"):
        vit.load(tmp_path / "newer.pt")
    same_video(vit.load(tmp_path / "own.pt"), call)


@case("huggingface.py:_read_video_folder", "a VideoMAE classifier that reads its first patch token",
      "TimeSformer's attention_type {} is not supported", "ViViT's tubelets {}×{}×{} are not square",
      "patches {} are not square", "The video processor turns its resize or its centre crop off",
      "The video processor's resample {} is not supported", "The video processor's size {} is not supported")
def video_folders_this_explorer_does_not_build(tmp_path, monkeypatch):
    """Another clear refusal each (no advice: what these families' published models never have); the folder as
    transformers writes it opens, equal to its reference."""
    for family, change, message in (("videomae", {"use_mean_pooling": False}, "reads its first patch token"),
                                    ("videomae", {"patch_size": [8, 16]}, r"patches \[8, 16\] are not square"),
                                    ("timesformer", {"attention_type": "joint_space_time"}, "attention_type"),
                                    ("vivit", {"tubelet_size": [2, 8, 16]}, "tubelets 2×8×16 are not square")):
        ref, folder, call = _hf_video(tmp_path, family)
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, **change}))
        with pytest.raises(ValueError, match=message):
            vit.load(folder)
        (folder / "config.json").write_text(json.dumps(config))
        same_video(vit.load(folder), call)
    ref, folder, call = _hf_video(tmp_path, "videomae")
    for settings, message in (({"do_center_crop": False}, "turns its resize or its centre crop off"),
                              ({"resample": 0}, "resample 0 is not supported"),
                              ({"size": {"height": 32, "width": 32}}, "size .* is not supported")):
        (folder / "video_preprocessor_config.json").write_text(json.dumps(settings))
        with pytest.raises(ValueError, match=f"{folder.name}: .*{message}"):
            vit.load(folder)
    (folder / "video_preprocessor_config.json").write_text(json.dumps({"size": {"shortest_edge": 36}}))
    loaded = vit.load(folder)
    assert loaded.preprocess.resize == 36 and loaded.preprocess.crop == (224, 224)
    same_video(loaded, call)


@pytest.mark.parametrize("name", sorted(CASES))
def test_following_the_advice(name, tmp_path, monkeypatch):
    CASES[name][1](tmp_path, monkeypatch)

