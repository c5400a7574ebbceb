"""Protects the claim that transformers' SigLIP 2 NaFlex image tower (``siglip2_vision_model`` folders, and
``siglip2`` folders, whose image tower opens) is exactly transformers' model: each photo kept at its aspect ratio in
at most ``max_num_patches`` patches (Siglip2ImageProcessor), the learned position grid resized to the photo's own
grid as transformers resizes it (bilinear, antialiased), the padding up to ``max_num_patches`` masked. Our model runs
each photo alone at its own grid, with no padding; transformers runs it padded: the pooled embedding (relative
difference <= 1e-4) and every block's attention over the real tokens are the same, and the padding gets exactly no
attention. Then the whole pipeline from a photo (the processor's input, then the embedding), all 8 class-map methods
on a non-square grid, and CP-LRP equal to lxt's rules (its attention wrapper on transformers' eager attention, its
rule for nn.MultiheadAttention on the pooling head). lxt has no AttnLRP rule for nn.MultiheadAttention, the
module SigLIP's pooling head is, so AttnLRP is checked by our own rule tests only (tests/explain).
"""
from __future__ import annotations

import importlib
from functools import partial

import numpy as np
import pytest
import torch
import torch.nn as nn
import transformers
from PIL import Image
from safetensors.torch import save_file
from skimage import data
from transformers.models.siglip2.image_processing_siglip2 import convert_image_to_patches

import vit
from lrp_references import LRP_TOL, assert_close_relative, lxt_efficient, lxt_patched, per_patch
from reference_models import assert_close, images, randomize_
from viz.explain.explainer import explain_tensor
from viz.explain import METHODS
from vit.explain import CP_LRP, relevance_pass

P = 8                 # patch side of the small towers
TABLE = 16            # the table's patches: a 4×4 grid
VISION = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, patch_size=P,
              num_patches=TABLE)


def tower(seed: int = 0) -> transformers.Siglip2VisionModel:
    torch.manual_seed(seed)
    model = transformers.Siglip2VisionModel(transformers.Siglip2VisionConfig(**VISION, attn_implementation="eager"))
    return randomize_(model, std=0.05, seed=seed)


def padded(x: torch.Tensor, length: int) -> dict:
    """One photo (1, 3, H, W) as Siglip2ImageProcessor hands it to the model: (P, P, C) patches, padded with zeros to
    ``length``, the mask 0 on the padding, its grid as spatial_shapes."""
    patches = convert_image_to_patches(x[0], P)                                 # (n, P·P·3)
    n = patches.shape[0]
    values = torch.cat([patches, patches.new_zeros(length - n, patches.shape[1])])[None]
    mask = torch.zeros(1, length, dtype=torch.long)
    mask[0, :n] = 1
    return dict(pixel_values=values, pixel_attention_mask=mask,
                spatial_shapes=torch.tensor([[x.shape[-2] // P, x.shape[-1] // P]]))


@pytest.fixture(scope="module")
def siglip2(tmp_path_factory):
    ref = tower()
    folder = tmp_path_factory.mktemp("siglip2") / "vision"
    ref.save_pretrained(folder)
    return ref, vit.load(folder)


SIZES = [(32, 32), (24, 40), (16, 72), (40, 24), (48, 48)]   # the table's own grid, wide, very wide, tall, larger


def test_output_and_every_blocks_attention_equal_transformers_with_its_padding_masked(siglip2):
    ref, loaded = siglip2
    cfg = loaded.config
    assert (cfg.pos_embed_grid, cfg.pos_embed_interp, cfg.pos_embed_antialias) == ((4, 4), "bilinear", True)
    assert cfg.readout == "map" and not cfg.class_token and cfg.mlp_act == "gelu_tanh" and cfg.family == "naflex"
    for size in SIZES:
        x = images(1, size)
        n = (size[0] // P) * (size[1] // P)
        with torch.no_grad():
            out = ref(**padded(x, n + 5), output_attentions=True)
            capture = loaded.model.forward_with_attention(x)
            plain = loaded.model(x)
        assert_close(capture.output, out.pooler_output, f"embedding at {size}")
        assert_close(plain, out.pooler_output, f"fused forward at {size}")
        assert capture.attention.shape[1] == len(out.attentions)
        for layer, a in enumerate(out.attentions):
            assert_close(capture.attention[:, layer], a[:, :, :n, :n], f"attention of block {layer} at {size}")
            assert float(a[:, :, :n, n:].abs().max()) == 0.0       # the padding got no weight


def test_a_siglip2_model_folder_opens_its_image_tower(tmp_path):
    torch.manual_seed(0)
    full = randomize_(transformers.Siglip2Model(transformers.Siglip2Config(
        vision_config=VISION, text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                               num_attention_heads=2, vocab_size=99))), std=0.05)
    full.save_pretrained(tmp_path)
    loaded = vit.load(tmp_path)
    assert loaded.text is None and loaded.config.num_classes == 0
    x = images(2, (24, 40))
    batch = {k: torch.cat([padded(img[None], 20)[k] for img in x]) for k in ("pixel_values", "pixel_attention_mask",
                                                                           "spatial_shapes")}
    with torch.no_grad():
        assert_close(loaded.model(x), full.get_image_features(**batch).pooler_output)


def test_a_bare_siglip2_state_dict_is_recognised_by_its_linear_patch_embedding(siglip2, tmp_path):
    """No folder: the Linear patch embedding says SigLIP 2's NaFlex tower, its table the grid, its processor the
    rest (the model's patch, as many patches as the table has)."""
    ref, _ = siglip2
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(tmp_path / "model.safetensors"))
    loaded = vit.load(tmp_path / "model.safetensors", num_heads=4)
    p = loaded.preprocess
    assert loaded.config.pos_embed_grid == (4, 4) and (p.resize_mode, p.resize, p.patch) == ("patches", TABLE, P)
    assert {a.key for a in loaded.assumptions} == {"act_naflex", "img_size_table", "preprocess"}   # and said so
    assert not [a for a in siglip2[1].assumptions if a.key != "processor"]      # the folder's config says it all
    x = images(1, (24, 40))
    with torch.no_grad():
        assert_close(loaded.model(x), ref(**padded(x, 20)).pooler_output)


PHOTOS = {"wide": data.coffee(), "tall": np.ascontiguousarray(np.rot90(data.chelsea())),
          "tiny": data.chelsea()[:29, :45]}


@pytest.mark.parametrize("max_patches", [16, 40])
def test_the_pipeline_from_a_photo_equals_the_processor_and_the_model(max_patches, tmp_path):
    """Siglip2ImageProcessor's pixel values (the patches of the resized photo) and then the model's embedding, from
    the folder's own preprocessor_config.json, for photos of every shape."""
    ref = tower()
    ref.save_pretrained(tmp_path)
    processor = transformers.Siglip2ImageProcessorPil(patch_size=P, max_num_patches=max_patches)
    processor.save_pretrained(tmp_path)
    loaded = vit.load(tmp_path)
    assert loaded.preprocess.varies and loaded.preprocess.resize == max_patches
    for name, pixels in PHOTOS.items():
        photo = Image.fromarray(pixels)
        theirs = processor(images=photo, return_tensors="pt")
        x = loaded.preprocess(photo)
        gh, gw = (int(v) for v in theirs["spatial_shapes"][0])
        assert x.shape[-2:] == (gh * P, gw * P), name
        n = gh * gw
        ours = convert_image_to_patches(x[0], P)
        grey = float(((ours - theirs["pixel_values"][0, :n]).abs() * 0.5).max() * 255)
        assert grey <= 1.0, (name, grey)
        with torch.no_grad():
            torch.testing.assert_close(loaded.model(x), ref(**theirs).pooler_output, rtol=1e-4, atol=1e-5, msg=name)


class FeatureTarget:
    """One feature of the embedding: what a class is to a classifier."""

    def __init__(self, index: int):
        self.index = index

    def score(self, output):
        return output[:, self.index]

    def probability(self, output):
        return torch.sigmoid(output[:, self.index])

    def describe(self):
        return {"feature": self.index}


def test_every_class_map_method_runs_on_a_non_square_grid(siglip2):
    _, loaded = siglip2
    e = explain_tensor(loaded.model, images(1, (24, 56)), FeatureTarget(3))
    assert set(e.maps) == set(METHODS) and e.query == "map"
    for method, values in e.maps.items():
        assert values.shape == (3, 7) and np.isfinite(values).all(), method


def test_cp_lrp_equals_lxt(siglip2):
    """lxt's LayerNorm and GELU rules, its CP-LRP wrapper on the encoder's eager attention and on the pooling
    head's nn.MultiheadAttention (q and k get no gradient), then gradient × input of the pixels."""
    ref, loaded = siglip2
    lxt_efficient()
    patches = importlib.import_module("lxt.efficient.patches")
    modeling = importlib.import_module("transformers.models.siglip2.modeling_siglip2")
    from transformers.activations import GELUTanh

    def attention_rule(module) -> bool:
        module.eager_attention_forward = patches.cp_wrap_attention_forward(module.eager_attention_forward)
        return True

    patch_map = {nn.LayerNorm: partial(patches.patch_method, patches.layer_norm_forward),
                 GELUTanh: partial(patches.patch_method, patches.non_linear_forward, keep_original=True),
                 nn.MultiheadAttention: partial(patches.patch_method, patches.cp_multi_head_attention_forward,
                                                keep_original=True),
                 modeling: attention_rule}
    x = images(1, (24, 40), seed=3)
    n = 15
    for p in ref.parameters():
        p.requires_grad_(False)
    try:
        with lxt_patched(patch_map):
            pixels = x.clone().requires_grad_()
            batch = padded(pixels, n)      # no padding: the mask is all ones, the patches keep their gradient
            ref(**batch).pooler_output[0, 3].backward()
            heat = (pixels * pixels.grad).sum(1)[0].detach()
    finally:
        for p in ref.parameters():
            p.requires_grad_(True)
    got = relevance_pass(loaded.model, x, FeatureTarget(3), CP_LRP).relevance[0]
    assert_close_relative(got, per_patch(heat, P), LRP_TOL)
