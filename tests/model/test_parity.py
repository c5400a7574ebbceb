"""Protects the claim that our model *is* the reference model once a checkpoint is loaded.

Randomly initialised torchvision, timm, Hugging Face and Google-layout models are saved in their own
formats, loaded with ``vit.load``, and must give the same logits (max abs diff <= 1e-4). Every layer's
captured attention must equal the attention recomputed from the reference model's own weights (<= 1e-5).
"""
from __future__ import annotations

import numpy as np
import pytest
import timm
import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from torchvision.models import vision_transformer as tv

import vit
from reference_models import google_npz_arrays, images, randomize_
from vit.checkpoints.formats import checkpoint_filter_fn, detect_format

LOGIT_TOL = 1e-4
ATTN_TOL = 1e-5


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


def assert_attention_matches(ours: torch.Tensor, reference: list[torch.Tensor]) -> None:
    """ours (B, L, H, T, T) against one (B, H, T, T) map per layer from the reference."""
    assert ours.shape[1] == len(reference)
    for layer, ref in enumerate(reference):
        assert ours[:, layer].shape == ref.shape
        assert max_diff(ours[:, layer], ref) <= ATTN_TOL, f"layer {layer}"


# --- torchvision ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def torchvision_b16():
    torch.manual_seed(0)
    return randomize_(tv.vit_b_16(weights=None))


def torchvision_reference(model: tv.VisionTransformer, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Logits, and each layer's attention from torchvision's own nn.MultiheadAttention (need_weights, per head)."""
    inputs = []
    hooks = [layer.ln_1.register_forward_hook(lambda m, i, o: inputs.append(o)) for layer in model.encoder.layers]
    try:
        logits = model(x)
    finally:
        for h in hooks:
            h.remove()
    return logits, [layer.self_attention(y, y, y, need_weights=True, average_attn_weights=False)[1]
                    for layer, y in zip(model.encoder.layers, inputs)]


@pytest.mark.slow
def test_torchvision_vit_b_16_logits_and_attention(torchvision_b16, tmp_path):
    path = tmp_path / "vit_b_16_random.pth"
    torch.save(torchvision_b16.state_dict(), path)
    loaded = vit.load(path)
    assert loaded.format == "torchvision"
    assert loaded.config == vit.variant("vit_b_16")
    x = images(1, (224, 224))
    with torch.no_grad():
        logits, attn = loaded.model.forward_with_attention(x)[:2]
        ref_logits, ref_attn = torchvision_reference(torchvision_b16, x)
        assert max_diff(logits, ref_logits) <= LOGIT_TOL
        assert max_diff(loaded.model(x), ref_logits) <= LOGIT_TOL  # fused path too
    assert_attention_matches(attn, ref_attn)


@pytest.fixture(scope="module")
def torchvision_small():
    """A small custom torchvision ViT with a representation layer (heads.pre_logits) and 4 heads of 16 dims."""
    torch.manual_seed(0)
    model = tv.VisionTransformer(image_size=64, patch_size=8, num_layers=3, num_heads=4, hidden_dim=64, mlp_dim=96,
                                 num_classes=7, representation_size=32)
    return randomize_(model)


def test_torchvision_custom_logits_and_attention(torchvision_small, tmp_path):
    path = tmp_path / "small.pt"
    torch.save(torchvision_small.state_dict(), path)
    loaded = vit.load(path, num_heads=4)  # 16 dims per head: not inferable, so given
    cfg = loaded.config
    assert (cfg.img_size, cfg.patch_size, cfg.depth, cfg.embed_dim, cfg.mlp_dim, cfg.representation_size,
            cfg.num_classes) == ((64, 64), 8, 3, 64, 96, 32, 7)
    x = images(2, (64, 64))
    with torch.no_grad():
        logits, attn = loaded.model.forward_with_attention(x)[:2]
        ref_logits, ref_attn = torchvision_reference(torchvision_small, x)
    assert max_diff(logits, ref_logits) <= LOGIT_TOL
    assert_attention_matches(attn, ref_attn)


# --- timm ----------------------------------------------------------------------------------------------------

def timm_reference(model, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Logits, and each block's attention recomputed by hand from timm's qkv weights and its own norm1 output."""
    inputs = []
    hooks = [blk.norm1.register_forward_hook(lambda m, i, o: inputs.append(o)) for blk in model.blocks]
    try:
        logits = model(x)
    finally:
        for h in hooks:
            h.remove()
    maps = []
    for blk, y in zip(model.blocks, inputs):
        B, T, D = y.shape
        H = blk.attn.num_heads
        qkv = F.linear(y, blk.attn.qkv.weight, blk.attn.qkv.bias).reshape(B, T, 3, H, D // H).permute(2, 0, 3, 1, 4)
        q, k = qkv[0], qkv[1]
        maps.append(torch.softmax(q @ k.transpose(-2, -1) / (D // H) ** 0.5, dim=-1))
    return logits, maps


TIMM_MODELS = {  # name -> (create_model kwargs, input size)
    "vit_small_patch16_224": ({}, (224, 224)),
    "deit_tiny_distilled_patch16_224": ({}, (224, 224)),
    "vit_little_patch16_reg4_gap_256": ({"depth": 3}, (256, 256)),       # registers, no CLS, mean pool + fc_norm
    "vit_small_patch14_reg4_dinov2": ({"img_size": 112}, (112, 112)),    # CLS + registers, LayerScale, no head
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "vit_small_patch16_224" else n
                                  for n in sorted(TIMM_MODELS)])   # the full-size ViT-S: seconds, not milliseconds
def test_timm_logits_and_attention(name, tmp_path):
    kwargs, size = TIMM_MODELS[name]
    torch.manual_seed(0)
    ref = randomize_(timm.create_model(name, pretrained=False, **kwargs))
    path = tmp_path / f"{name}.safetensors"
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(path))
    loaded = vit.load(path)
    assert loaded.config.num_heads == ref.blocks[0].attn.num_heads
    assert loaded.model.cfg.num_prefix_tokens == ref.num_prefix_tokens
    x = images(2, size)
    with torch.no_grad():
        logits, attn = loaded.model.forward_with_attention(x)[:2]
        ref_logits, ref_attn = timm_reference(ref, x)
        assert max_diff(logits, ref_logits) <= LOGIT_TOL
        assert max_diff(loaded.model(x), ref_logits) <= LOGIT_TOL  # fused path too
    assert_attention_matches(attn, ref_attn)


@pytest.mark.slow
def test_timm_checkpoint_wrapped_like_facebooks_deit(tmp_path):
    """DeiT's released .pth files hold {"model": state_dict}; the distilled head is averaged with the class head."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("deit_tiny_distilled_patch16_224", pretrained=False))
    path = tmp_path / "deit_tiny_distilled.pth"
    torch.save({"model": ref.state_dict(), "epoch": 299}, path)
    loaded = vit.load(path)
    assert loaded.config.distilled and loaded.format == "timm"
    x = images(1, (224, 224))
    with torch.no_grad():
        assert max_diff(loaded.model(x), ref(x)) <= LOGIT_TOL


# --- Hugging Face ------------------------------------------------------------------------------------------

def hf_tiny(cls_name: str, **extra):
    import transformers
    config_cls = transformers.DeiTConfig if cls_name.startswith("DeiT") else transformers.ViTConfig
    config = config_cls(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                        image_size=32, patch_size=8, num_labels=5, attn_implementation="eager",
                        id2label={i: f"thing {i}" for i in range(5)}, **extra)
    torch.manual_seed(0)
    return randomize_(getattr(transformers, cls_name)(config))


@pytest.mark.parametrize("cls_name", ["ViTForImageClassification", "DeiTForImageClassificationWithTeacher"])
def test_huggingface_folder_logits_attention_and_labels(cls_name, tmp_path):
    ref = hf_tiny(cls_name)
    ref.save_pretrained(tmp_path / "hf")
    loaded = vit.load(tmp_path / "hf")
    assert loaded.format == "huggingface"
    assert loaded.labels == [f"thing {i}" for i in range(5)]
    assert loaded.config.layer_norm_eps == 1e-12 and loaded.config.num_heads == 4
    x = images(2, (32, 32))
    with torch.no_grad():
        logits, attn = loaded.model.forward_with_attention(x)[:2]
        out = ref(pixel_values=x, output_attentions=True)
    assert max_diff(logits, out.logits) <= LOGIT_TOL
    assert_attention_matches(attn, list(out.attentions))


def test_huggingface_pytorch_model_bin_in_memory_key_names(tmp_path):
    """pytorch_model.bin written from a transformers>=5 model in memory (q_proj/o_proj names) loads too."""
    ref = hf_tiny("ViTForImageClassification")
    folder = tmp_path / "hf_bin"
    folder.mkdir()
    (folder / "config.json").write_text(ref.config.to_json_string())
    torch.save(ref.state_dict(), folder / "pytorch_model.bin")
    loaded = vit.load(folder)
    x = images(1, (32, 32))
    with torch.no_grad():
        assert max_diff(loaded.model(x), ref(pixel_values=x).logits) <= LOGIT_TOL


# --- Google's original .npz -----------------------------------------------------------------------------

def test_google_npz_logits(tmp_path):
    from timm.models.vision_transformer import VisionTransformer as TimmViT, _load_weights
    kw = dict(img_size=48, patch_size=16, embed_dim=96, depth=2, num_heads=2, mlp_ratio=3, num_classes=11)
    torch.manual_seed(0)
    ref = randomize_(TimmViT(**kw))
    path = tmp_path / "ViT-custom.npz"
    np.savez(path, **google_npz_arrays(ref))
    # the file really is in Google's layout: timm's own .npz reader rebuilds the reference exactly
    check = TimmViT(**kw).eval()
    _load_weights(check, str(path))
    for k, v in ref.state_dict().items():
        assert torch.equal(check.state_dict()[k], v), k
    loaded = vit.load(path)
    assert loaded.format == "google-npz"
    assert loaded.config.num_heads == 2  # read from the (D, H, Dh) query kernels, not 96 // 64
    assert loaded.preprocess.mean == (0.5, 0.5, 0.5)
    x = images(2, (48, 48))
    with torch.no_grad():
        logits, attn = loaded.model.forward_with_attention(x)[:2]
        ref_logits, ref_attn = timm_reference(ref, x)
    assert max_diff(logits, ref_logits) <= LOGIT_TOL
    assert_attention_matches(attn, ref_attn)


# --- format detection --------------------------------------------------------------------------------------

def test_format_detection_from_keys(torchvision_small):
    timm_sd = timm.create_model("vit_tiny_patch16_224", pretrained=False, depth=1).state_dict()
    assert detect_format(torchvision_small.state_dict()) == "torchvision"
    assert detect_format(timm_sd) == "timm"
    assert detect_format({k: v for k, v in timm_sd.items() if not k.startswith("head.")}) == "dino"
    assert detect_format({f"backbone.{k}": v for k, v in timm_sd.items()}) == "dino"
    assert detect_format(hf_tiny("ViTForImageClassification").state_dict()) == "huggingface"
    with pytest.raises(ValueError, match="Unknown checkpoint format.*fc.weight"):
        detect_format({"fc.weight": torch.zeros(2, 2)})


def test_filter_fn_is_pure_and_maps_every_key(torchvision_small):
    """The swap table renames every torchvision key onto one of ours and leaves its input untouched."""
    source = torchvision_small.state_dict()
    before = dict(source)
    out = checkpoint_filter_fn(source)
    cfg = vit.variant("tiny", img_size=64, patch_size=8, depth=3, embed_dim=64, num_heads=4, mlp_dim=96,
                      num_classes=7, representation_size=32)
    with torch.device("meta"):
        ours = vit.VisionTransformer(cfg).state_dict()
    assert set(out) == set(ours)
    assert all(tuple(out[k].shape) == tuple(v.shape) for k, v in ours.items())
    assert source.keys() == before.keys() and all(source[k] is before[k] for k in before)


def test_dino_training_checkpoint_loads_the_teacher_backbone(tmp_path):
    """DINO's checkpoints hold {"teacher", "student"} with a .backbone prefix and a projection head we drop."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_small_patch16_224", pretrained=False, num_classes=0, depth=2))
    teacher = {f"backbone.{k}": v for k, v in ref.state_dict().items()}
    teacher.update({"head.mlp.0.weight": torch.zeros(8, 384), "head.last_layer.weight_g": torch.ones(16, 1)})
    student = {k: torch.zeros_like(v) for k, v in teacher.items()}
    torch.save({"teacher": teacher, "student": student, "epoch": 100}, tmp_path / "dino_vits16.pth")
    loaded = vit.load(tmp_path / "dino_vits16.pth")
    assert loaded.format == "dino" and loaded.labels == [] and loaded.config.num_classes == 0
    x = images(1, (224, 224))
    with torch.no_grad():
        features = loaded.model(x)                      # (B, D): the CLS token after the final norm
        assert features.shape == (1, 384)
        assert max_diff(features, ref(x)) <= LOGIT_TOL

