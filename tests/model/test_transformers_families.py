"""Protects the claim that transformers' DINOv2 (with and without registers, SwiGLU for the giant), its classifiers
(the CLS token beside the mean of the patches), DeiT's two classifiers (the CLS token; the CLS and distillation heads
averaged), MAE's encoder, MSN and data2vec-vision folders, and open_clip's SigLIP / SigLIP 2 folders whose image tower is a timm model, load
as exactly their reference: the same output (relative difference <= 1e-4) and every block's softmax attention as
the reference computed it (transformers' eager attention, timm's explicit path), at the native size and at another
size (transformers resizes the position table as these models do, DINOv2's register variant with antialiasing;
open_clip's timm tower against timm's own dynamic-size model), on random weights perturbed so that no zero bias or
identity LayerNorm hides a wrong mapping. Then every class-map method runs on each, and AttnLRP and CP-LRP equal
lxt's rules where lxt reaches the attention (the families whose transformers code calls a module-level
eager_attention_forward)."""
from __future__ import annotations

import importlib
import json
from functools import partial

import numpy as np
import open_clip
import pytest
import timm
import torch
import torch.nn as nn
import transformers
from safetensors.torch import save_file

import vit
from lrp_references import LRP_TOL, assert_close_relative, lxt_efficient, lxt_patched, per_patch
from reference_models import assert_close, images, randomize_
from viz.explain.explainer import explain_tensor
from viz.explain import METHODS
from vit.explain import ATTN_LRP, CP_LRP, ClassTarget, relevance_pass

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, patch_size=8, attn_implementation="eager")


def assert_attention(ours: torch.Tensor, reference) -> None:
    assert ours.shape[1] == len(reference)
    for layer, ref in enumerate(reference):
        assert_close(ours[:, layer], ref, f"attention of block {layer}")


def saved(model, tmp_path, name: str):
    folder = tmp_path / name
    model.save_pretrained(folder)
    return folder


# (name, model, {what the call takes}, how its output reads, native size, another size)
def dinov2(**kw):
    return transformers.Dinov2Model(transformers.Dinov2Config(**SMALL, image_size=32, **kw))


def dinov2_registers(**kw):
    return transformers.Dinov2WithRegistersModel(transformers.Dinov2WithRegistersConfig(
        **SMALL, image_size=48, num_register_tokens=4, **kw))


def vit_mae():
    return transformers.ViTMAEModel(transformers.ViTMAEConfig(**SMALL, intermediate_size=128, image_size=32,
                                                              mask_ratio=0.0))


def vit_msn():
    return transformers.ViTMSNForImageClassification(transformers.ViTMSNConfig(
        **SMALL, intermediate_size=128, image_size=32, num_labels=5))


def data2vec(**kw):
    return transformers.Data2VecVisionForImageClassification(transformers.Data2VecVisionConfig(
        **SMALL, intermediate_size=128, image_size=32, num_labels=5, layer_scale_init_value=0.1, **kw))


def dinov2_classifier(**kw):
    return transformers.Dinov2ForImageClassification(transformers.Dinov2Config(**SMALL, image_size=32, num_labels=3,
                                                                               **kw))


def dinov2_registers_classifier(**kw):
    return transformers.Dinov2WithRegistersForImageClassification(transformers.Dinov2WithRegistersConfig(
        **SMALL, image_size=48, num_register_tokens=4, num_labels=3, **kw))


def aimv2(**kw):
    return transformers.Aimv2VisionModel(transformers.Aimv2VisionConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, image_size=32, patch_size=8,
        attn_implementation="eager", **kw))


def ijepa():
    return transformers.IJepaModel(transformers.IJepaConfig(**SMALL, intermediate_size=128, image_size=32))


def deit(cls, **kw):
    return cls(transformers.DeiTConfig(**SMALL, intermediate_size=128, image_size=32, num_labels=5, **kw))


FAMILIES = {  # name -> (reference builder, its output, native size, another size or None)
    "dinov2": (dinov2, lambda out: out.pooler_output, (32, 32), (48, 40)),
    "dinov2-swiglu": (partial(dinov2, use_swiglu_ffn=True), lambda out: out.pooler_output, (32, 32), (40, 48)),
    "dinov2_with_registers": (dinov2_registers, lambda out: out.pooler_output, (48, 48), (32, 24)),
    "vit_mae": (vit_mae, lambda out: out.last_hidden_state[:, 0], (32, 32), (48, 40)),
    "vit_msn": (vit_msn, lambda out: out.logits, (32, 32), (48, 40)),
    "data2vec-vision": (partial(data2vec, use_relative_position_bias=True, use_mean_pooling=True),
                        lambda out: out.logits, (32, 32), None),
    "data2vec-vision-shared-bias": (partial(data2vec, use_shared_relative_position_bias=True,
                                            use_absolute_position_embeddings=True, use_mean_pooling=False),
                                    lambda out: out.logits, (32, 32), None),
    # the readouts of the classifiers: [CLS, mean of the patches] (DINOv2, registers left out of the mean), the CLS
    # token beside a distillation token that has no head, the two heads averaged
    "dinov2-classifier": (dinov2_classifier, lambda out: out.logits, (32, 32), (48, 40)),
    "dinov2_with_registers-classifier": (dinov2_registers_classifier, lambda out: out.logits, (48, 48), (32, 24)),
    "deit": (partial(deit, transformers.DeiTForImageClassification), lambda out: out.logits, (32, 32), (48, 40)),
    "deit-with-teacher": (partial(deit, transformers.DeiTForImageClassificationWithTeacher), lambda out: out.logits,
                          (32, 32), (48, 40)),
    # AIMv2 (RMSNorm, SwiGLU, no biases; its head a probe that is itself the query) and I-JEPA (no CLS token: the
    # mean of the patches)
    "aimv2": (aimv2, lambda out: out.pooler_output, (32, 32), None),
    "aimv2-headless": (partial(aimv2, use_head=False), lambda out: out.last_hidden_state.mean(dim=1), (32, 32), None),
    "ijepa": (ijepa, lambda out: out.last_hidden_state.mean(dim=1), (32, 32), (48, 40)),
}
READOUTS = {"dinov2-classifier": "cls_mean", "dinov2_with_registers-classifier": "cls_mean", "deit": "cls",
            "deit-with-teacher": "distilled", "data2vec-vision": "mean", "vit_mae": "cls", "vit_msn": "cls",
            "data2vec-vision-shared-bias": "cls", "dinov2": "cls", "dinov2-swiglu": "cls",
            "dinov2_with_registers": "cls", "aimv2": "map", "aimv2-headless": "mean", "ijepa": "mean"}


def reference_call(name: str, ref, x: torch.Tensor):
    """The reference's forward with every block's attention; MAE unmasked, its patches in their own order (sorted
    noise keeps the order), the position table resized for a size other than the native one."""
    kwargs = dict(pixel_values=x, output_attentions=True)
    native = FAMILIES[name][2]
    if name == "vit_mae":
        n = (x.shape[-2] // 8) * (x.shape[-1] // 8)
        kwargs["noise"] = torch.arange(n, dtype=torch.float32).expand(x.shape[0], n)
    if tuple(x.shape[-2:]) != native and name in ("vit_mae", "vit_msn", "deit", "deit-with-teacher", "ijepa"):
        kwargs["interpolate_pos_encoding"] = True
    with torch.no_grad():
        return ref(**kwargs)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """name -> (reference, loaded), each built once."""
    cache = {}

    def get(name: str):
        if name not in cache:
            torch.manual_seed(0)
            ref = randomize_(FAMILIES[name][0]())
            cache[name] = ref, vit.load(saved(ref, tmp_path_factory.mktemp("hf"), name))
        return cache[name]
    return get


@pytest.fixture(params=sorted(FAMILIES))
def family(request, built):
    return (request.param, *built(request.param))


def test_output_and_every_blocks_attention_equal_transformers(family):
    name, ref, loaded = family
    _, output_of, native, other = FAMILIES[name]
    for size in [native] + ([other] if other else []):
        x = images(2, size)
        out = reference_call(name, ref, x)
        with torch.no_grad():
            capture = loaded.model.forward_with_attention(x)
            plain = loaded.model(x)
        assert_close(capture.output, output_of(out), f"output at {size}")
        assert_close(plain, output_of(out), f"fused forward at {size}")
        assert_attention(capture.attention, list(out.attentions))


def test_what_each_family_is(family):
    name, ref, loaded = family
    cfg = loaded.config
    assert loaded.format.startswith("huggingface") and loaded.assumptions[0].key == "processor"
    assert loaded.verified.library == "transformers"
    assert cfg.num_heads == 4 and not [a for a in loaded.assumptions if a.key.startswith("heads")]
    assert cfg.readout == READOUTS[name]
    if name.startswith("dinov2"):
        assert cfg.layer_scale and cfg.num_classes == (3 if name.endswith("classifier") else 0)
        assert cfg.layer_norm_eps == 1e-6
        assert cfg.num_reg_tokens == (4 if name.startswith("dinov2_with_registers") else 0)
        assert cfg.pos_embed_antialias == name.startswith("dinov2_with_registers")
        assert cfg.mlp_act == ("swiglu" if name == "dinov2-swiglu" else "gelu")
        assert loaded.preprocess.resize_mode == "shorter"     # BitImageProcessor: shortest edge, centre crop
    if name.startswith("data2vec"):
        assert cfg.rel_pos_bias and cfg.family == "beit" and cfg.layer_scale
        assert cfg.readout == ("mean" if name == "data2vec-vision" else "cls")
        assert cfg.pos_embed_kind == ("learned" if name.endswith("shared-bias") else "none")
    if name == "vit_msn":
        assert cfg.num_classes == 5 and cfg.layer_norm_eps == ref.config.layer_norm_eps


@pytest.mark.parametrize("name", ["data2vec-vision", "data2vec-vision-shared-bias"])
def test_a_beit_family_model_refuses_another_grid(name, built):
    """BEiT's relative position bias is learnt for one grid (timm's rule): another input size is refused."""
    _, loaded = built(name)
    with pytest.raises(ValueError, match="relative position bias learnt on the 4×4 grid"):
        loaded.model(images(1, (48, 40)))


def test_a_vit_mae_pretraining_folder_opens_its_encoder(tmp_path):
    torch.manual_seed(0)
    ref = randomize_(transformers.ViTMAEForPreTraining(transformers.ViTMAEConfig(
        **SMALL, intermediate_size=128, image_size=32, mask_ratio=0.0, decoder_hidden_size=32,
        decoder_num_hidden_layers=1, decoder_num_attention_heads=2, decoder_intermediate_size=64)))
    loaded = vit.load(saved(ref, tmp_path, "mae"))
    x = images(2, (32, 32))
    noise = torch.arange(16, dtype=torch.float32).expand(2, 16)
    with torch.no_grad():
        assert_close(loaded.model(x), ref.vit(pixel_values=x, noise=noise).last_hidden_state[:, 0])


def test_a_dinov2_classifiers_backbone_opens_when_asked(tmp_path):
    """Dinov2ForImageClassification without its head (num_classes=0): the backbone's pooled CLS token."""
    torch.manual_seed(0)
    ref = randomize_(dinov2_classifier())
    backbone = vit.load(saved(ref, tmp_path, "dinov2-cls"), num_classes=0)
    assert backbone.config.readout == "cls"
    x = images(2, (32, 32))
    with torch.no_grad():
        assert_close(backbone.model(x), ref.dinov2(pixel_values=x).pooler_output)


# --- open_clip's SigLIP folders with a timm image tower ------------------------------------------------------------

def open_clip_siglip(timm_name: str, image_size: int, seed: int = 0) -> open_clip.CustomTextCLIP:
    """open_clip's SigLIP as its Hub configs build it (a timm tower with MAP pooling and no projection, a text tower
    of its own), the timm tower made short (2 blocks of its own width) so the test stays fast."""
    vision = dict(image_size=image_size, timm_model_name=timm_name, timm_model_pretrained=False, timm_pool="map",
                  timm_proj="none")
    text = dict(context_length=16, vocab_size=100, width=64, heads=2, layers=1, no_causal_mask=True, proj_bias=True,
                pool_type="last")
    torch.manual_seed(seed)
    with torch.device("meta"):   # the full-size tower is replaced before anything is computed
        model = open_clip.CustomTextCLIP(embed_dim=768, vision_cfg=vision, text_cfg=text)
    model = model.to_empty(device="cpu")
    model.visual.trunk = timm.create_model(timm_name, depth=2, img_size=image_size, num_classes=0, global_pool="map")
    for p in model.parameters():
        nn.init.normal_(p, std=0.02)
    return randomize_(model, std=0.3), {"model_cfg": {"embed_dim": 768, "vision_cfg": vision, "text_cfg": text,
                                                      "custom_text": True},
                                        "preprocess_cfg": {"mean": [0.5] * 3, "std": [0.5] * 3,
                                                           "interpolation": "bicubic", "resize_mode": "squash"}}


SIGLIPS = {"siglip": "vit_base_patch16_siglip_224", "siglip2": "vit_base_patch32_siglip_256"}


@pytest.fixture(scope="module", params=sorted(SIGLIPS))
def siglip(request, tmp_path_factory):
    name = SIGLIPS[request.param]
    patch = 32 if "patch32" in name else 16
    ref, config = open_clip_siglip(name, 4 * patch)
    folder = tmp_path_factory.mktemp("open_clip")
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(folder / "open_clip_model.safetensors"))
    (folder / "open_clip_config.json").write_text(json.dumps(config))
    return ref, vit.load(folder), patch, name


def test_open_clip_siglip_equals_encode_image(siglip):
    ref, loaded, patch, name = siglip
    cfg = loaded.config
    assert loaded.format == "open-clip-timm" and cfg.family == "siglip" and loaded.text is None
    assert cfg.mlp_act == ("gelu_tanh" if "patch32" in name else "gelu") and cfg.pos_embed_antialias
    assert loaded.assumptions == [] and loaded.verified.library == "timm"    # timm builds the tower it names
    assert loaded.preprocess.resize_mode == "squash" and loaded.preprocess.mean == (0.5, 0.5, 0.5)
    x = images(2, (4 * patch, 4 * patch))
    trunk = ref.visual.trunk
    for blk in trunk.blocks:
        blk.attn.fused_attn = False
    maps = []
    hooks = [blk.attn.attn_drop.register_forward_hook(lambda m, i, o: maps.append(i[0])) for blk in trunk.blocks]
    with torch.no_grad():
        expected = ref.encode_image(x)
        capture = loaded.model.forward_with_attention(x)
    for h in hooks:
        h.remove()
    assert_close(capture.output, expected)
    assert_attention(capture.attention, maps)
    with pytest.raises(ValueError, match="does not open as the model timm"):   # the other activation is refused
        vit.load(loaded.source, mlp_act="gelu" if cfg.mlp_act == "gelu_tanh" else "gelu_tanh")


def test_open_clip_siglip_at_another_size_equals_timms_dynamic_tower(siglip):
    ref, loaded, patch, name = siglip
    dynamic = timm.create_model(name, depth=2, img_size=4 * patch, num_classes=0, global_pool="map",
                                dynamic_img_size=True).eval()
    dynamic.load_state_dict(ref.visual.trunk.state_dict())
    x = images(2, (6 * patch, 5 * patch))   # upsampled table: timm's antialiasing has nothing to smooth
    with torch.no_grad():
        assert_close(loaded.model(x), dynamic(x))


def test_an_open_clip_tower_that_is_not_a_vit_is_refused(tmp_path):
    (tmp_path / "open_clip_config.json").write_text(json.dumps({"model_cfg": {"vision_cfg": {
        "timm_model_name": "convnext_base", "timm_pool": "avg", "timm_proj": "linear"}}}))
    save_file({"visual.trunk.stem.0.weight": torch.zeros(1)}, str(tmp_path / "open_clip_model.safetensors"))
    with pytest.raises(ValueError, match="timm's 'convnext_base', which is not a ViT this explorer opens"):
        vit.load(tmp_path)


# --- class maps ----------------------------------------------------------------------------------------------------

class FeatureTarget:
    """One feature of a backbone's output: what a class is to a classifier."""

    def __init__(self, index: int):
        self.index = index

    def score(self, output):
        return output[:, self.index]

    def probability(self, output):
        return torch.sigmoid(output[:, self.index])

    def describe(self):
        return {"feature": self.index}


def test_every_class_map_method_runs(family):
    name, _, loaded = family
    target = ClassTarget(2) if loaded.config.num_classes else FeatureTarget(3)
    x = images(1, FAMILIES[name][2])
    e = explain_tensor(loaded.model, x, target)
    grid = loaded.model.token_layout(*x.shape[-2:]).grid
    assert set(e.maps) == set(METHODS)
    for method, values in e.maps.items():
        assert values.shape == grid and np.isfinite(values).all(), method


def test_every_class_map_method_runs_on_open_clip_siglip(siglip):
    _, loaded, patch, _ = siglip
    e = explain_tensor(loaded.model, images(1, (4 * patch, 4 * patch)), FeatureTarget(5))
    assert set(e.maps) == set(METHODS) and all(np.isfinite(v).all() for v in e.maps.values())


LXT_MODULES = {"dinov2": "dinov2", "dinov2_with_registers": "dinov2_with_registers", "vit_mae": "vit_mae",
               "vit_msn": "vit_msn"}   # data2vec-vision computes its attention inline: lxt's wrapper cannot reach it


def lxt_heatmap(ref, x, index: int, output_of) -> torch.Tensor:
    """lxt's recipe: no parameter gradients, backward from the score, relevance = (input · its gradient) summed
    over channels -> (H, W)."""
    for p in ref.parameters():
        p.requires_grad_(False)
    x = x.clone().requires_grad_()
    output_of(ref, x)[0, index].backward()
    return (x * x.grad).sum(1)[0].detach()


@pytest.mark.parametrize("rules", ["attnlrp", "cp_lrp"])
@pytest.mark.parametrize("name", sorted(LXT_MODULES))
def test_lrp_equals_lxt(name, rules, built):
    """lxt's rule functions patched into the reference (its LayerNorm and GELU rules, its attention wrapper around
    the module's eager attention: q, k gradients / 4 and v / 2 for AttnLRP, CP-LRP's inside the attention), then
    lxt's recipe: gradient × input of the pixels, summed per patch."""
    ref, loaded = built(name)
    from transformers.activations import GELUActivation
    lxt_efficient()
    patches = importlib.import_module("lxt.efficient.patches")
    modeling = importlib.import_module(f"transformers.models.{LXT_MODULES[name]}.modeling_{LXT_MODULES[name]}")
    wrap = patches.wrap_attention_forward if rules == "attnlrp" else patches.cp_wrap_attention_forward

    def attention_rule(module) -> bool:
        module.eager_attention_forward = wrap(module.eager_attention_forward)
        return True

    patch_map = {nn.LayerNorm: partial(patches.patch_method, patches.layer_norm_forward),
                 GELUActivation: partial(patches.patch_method, patches.non_linear_forward, keep_original=True),
                 modeling: attention_rule}
    index = 2 if loaded.config.num_classes else 3
    output_of = FAMILIES[name][1]
    x = images(1, FAMILIES[name][2], seed=3)
    try:
        with lxt_patched(patch_map):
            heat = lxt_heatmap(ref, x, index, lambda model, pixels: output_of(_forward(name, model, pixels)))
    finally:
        for p in ref.parameters():
            p.requires_grad_(True)
    target = ClassTarget(index) if loaded.config.num_classes else FeatureTarget(index)
    got = relevance_pass(loaded.model, x, target, ATTN_LRP if rules == "attnlrp" else CP_LRP).relevance[0]
    assert_close_relative(got, per_patch(heat, 8), LRP_TOL)


def _forward(name: str, model, x: torch.Tensor):
    """The reference's forward with gradients (MAE unmasked, in order)."""
    kwargs = {}
    if name == "vit_mae":
        n = (x.shape[-2] // 8) * (x.shape[-1] // 8)
        kwargs["noise"] = torch.arange(n, dtype=torch.float32).expand(x.shape[0], n)
    return model(pixel_values=x, **kwargs)
