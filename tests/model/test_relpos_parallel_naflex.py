"""Protects the claim that timm's relative-position ViTs (``vit_relpos_*`` with the MLP log-coordinate bias: LayerScale
blocks and mean pooling, a CLS token, CLS + mean pooling, the residual-post-norm ``*_rpn``, and ``vit_srelpos_*``'s
bias shared by every block), its parallel-block ViTs (``vit_*_18x2_224``: two attentions side by side, then two
MLPs) and its NaFlexViT (``naflexvit_*``: a learned table resized to every photo's grid, a padding mask for batches
of photos of different shapes) load from timm's own state dicts as exactly timm's models: the same output (relative
difference <= 1e-4) and every block's softmax attention as timm computed it (its explicit path), at the native size
and at another size the family supports (relpos: any grid, the MLP computes the bias for it; parallel blocks: the
learned table resized as timm's dynamic_img_size resizes it; NaFlex: non-square grids in timm's NaFlex mode, padded
and masked as its data loader batches them), on random weights perturbed so that no zero bias, identity LayerNorm
or LayerScale of 1e-5 hides a wrong mapping.

What the tensors do not say is identified from what distinguishes it (the res-post-norm blocks have no LayerScale,
a SigLIP NaFlex tower no registers, LayerScale or CLS token) or refused with the missing fact and how to give it
(NaFlexViT's gap and par_gap share their tensors); the advice, followed, gives parity, and the other answer a
different model. Layouts not reproduced are refused in one sentence.
"""
from __future__ import annotations

import json

import pytest
import timm
import torch
from safetensors.torch import save_file
from timm.data.naflex_transforms import get_image_size_for_seq, patchify_image

import vit
from reference_models import assert_close, images, randomize_


def saved(model: torch.nn.Module, folder, name: str = "model", sidecar: dict | None = None):
    path = folder / f"{name}.safetensors"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
    if sidecar:
        (folder / f"{name}.json").write_text(json.dumps({"config": sidecar}))
    return path


def timm_model(name: str, seed: int = 0, **kw) -> torch.nn.Module:
    torch.manual_seed(seed)
    return randomize_(timm.create_model(name, pretrained=False, **kw), std=0.05, seed=seed)


class Maps:
    """timm's attention maps, every block, from its explicit path: the input of each ``attn_drop`` (the softmax)."""

    def __init__(self, attentions):
        self.maps, self.hooks = [], []
        for attn in attentions:
            attn.fused_attn = False
            self.hooks.append(attn.attn_drop.register_forward_hook(lambda m, i, o: self.maps.append(i[0])))

    def __enter__(self):
        return self.maps

    def __exit__(self, *exc):
        for h in self.hooks:
            h.remove()


def assert_attention(ours: torch.Tensor, reference: list[torch.Tensor]) -> None:
    assert ours.shape[1] == len(reference)
    for layer, ref in enumerate(reference):
        assert_close(ours[:, layer], ref, f"attention of block {layer}")


# --- relative-position ViTs ----------------------------------------------------------------------------------------

RELPOS = {  # timm architecture -> (what each is: config fields ours must read off the tensors)
    "vit_relpos_small_patch16_224": dict(layer_scale=True, res_post_norm=False, readout="mean", fc_norm=True,
                                         class_token=False, rel_pos_mlp_dim=128),
    "vit_srelpos_small_patch16_224": dict(layer_scale=True, res_post_norm=False, readout="mean", fc_norm=False,
                                          class_token=False, rel_pos_mlp_dim=384),
    "vit_relpos_medium_patch16_cls_224": dict(layer_scale=True, readout="cls", class_token=True,
                                              rel_pos_mlp_dim=256, num_heads=8),
    "vit_relpos_base_patch16_clsgap_224": dict(layer_scale=True, readout="mean", fc_norm=True, class_token=True),
    "vit_relpos_small_patch16_rpn_224": dict(layer_scale=False, res_post_norm=True, readout="mean",
                                             class_token=False),
}


@pytest.fixture(scope="module")
def relpos(tmp_path_factory):
    cache = {}

    def get(name):
        if name not in cache:
            ref = timm_model(name, depth=2)
            cache[name] = ref, vit.load(saved(ref, tmp_path_factory.mktemp("relpos")))
        return cache[name]
    return get


WIDE = {"vit_relpos_medium_patch16_cls_224", "vit_relpos_base_patch16_clsgap_224", "vit_base_patch16_18x2_224"}


def by_width(names):
    """The 512- and 768-wide models take seconds each: slow; the 384-wide ones of each kind stay in the fast tier."""
    return [pytest.param(n, marks=pytest.mark.slow) if n in WIDE else n for n in sorted(names)]


@pytest.mark.parametrize("name", by_width(RELPOS))
def test_relpos_output_and_every_blocks_attention_equal_timm(name, relpos):
    ref, loaded = relpos(name)
    cfg = loaded.config
    assert cfg.rel_pos_mlp and cfg.pos_embed_kind == "none" and cfg.family == "relpos" and cfg.img_size == (224, 224)
    assert {k: getattr(cfg, k) for k in RELPOS[name]} == RELPOS[name]
    for size in [(224, 224), (160, 288)]:               # the bias MLP serves any grid; timm built at that size
        other = ref if size == (224, 224) else timm_model(name, depth=2, img_size=size)
        other.load_state_dict(ref.state_dict())
        x = images(2, size)
        with Maps([blk.attn for blk in other.blocks]) as maps, torch.no_grad():
            expected = other(x)
        with torch.no_grad():
            capture = loaded.model.forward_with_attention(x)
            plain = loaded.model(x)
        assert_close(capture.output, expected, f"output at {size}")
        assert_close(plain, expected, f"fused forward at {size}")
        assert_attention(capture.attention, maps)


def test_relpos_preprocessing_is_timms_and_the_plus_models_native_size(tmp_path):
    """A bare file gets the relpos configs' own: 0.5/0.5, bicubic, crop_pct 0.9; the 896-wide "plus" models are 240
    (patch 16) and 256 (patch 32) pixels, as their pretrained_cfg says."""
    loaded = vit.load(saved(timm_model("vit_relpos_base_patch32_plus_rpn_256", depth=1), tmp_path))
    assert loaded.config.img_size == (256, 256) and loaded.config.num_heads == 14 and loaded.config.res_post_norm
    p = loaded.preprocess
    assert (p.crop, p.resize, p.interpolation, p.mean, p.std) == ((256, 256), 284, "bicubic", (0.5,) * 3, (0.5,) * 3)
    plus = vit.load(saved(timm_model("vit_relpos_base_patch16_plus_240", depth=1), tmp_path, "plus"))
    assert plus.config.img_size == (240, 240) and plus.config.qkv_bias and plus.config.layer_scale


def test_the_wrong_block_order_gives_another_model(relpos):
    """res_post_norm is read from the missing LayerScale; forcing the other order changes the output."""
    ref, loaded = relpos("vit_relpos_small_patch16_rpn_224")
    x = images(1, (224, 224))
    wrong = vit.load(loaded.source, res_post_norm=False)
    with torch.no_grad():
        expected = ref(x)
        assert (wrong.model(x) - expected).abs().max() > 1e-2 * expected.abs().max()


def test_relpos_layouts_not_reproduced_are_refused(tmp_path):
    """timm's Swin V2 mode of the MLP (sigmoid × 16, no fc2 bias) is not its relpos models' and is refused."""
    swin = timm_model("vit_relpos_small_patch16_224", depth=1, rel_pos_type="mlp_swin")
    with pytest.raises(ValueError, match="Swin V2 mode"):
        vit.load(saved(swin, tmp_path))


def test_a_relpos_table_instead_of_the_mlp_loads_as_beits_bias(tmp_path):
    """rel_pos_type='bias' (a learnt table, no registered model uses it): BEiT's table, with or without a CLS token."""
    for class_token in (False, True):
        ref = timm_model("vit_relpos_small_patch16_224", depth=2, rel_pos_type="bias", img_size=64,
                         class_token=class_token, global_pool="token" if class_token else "avg",
                         fc_norm=not class_token)
        loaded = vit.load(saved(ref, tmp_path, f"bias{class_token}"))
        assert loaded.config.rel_pos_bias and not loaded.config.rel_pos_mlp and loaded.config.img_size == (64, 64)
        x = images(2, (64, 64))
        with Maps([blk.attn for blk in ref.blocks]) as maps, torch.no_grad():
            expected = ref(x)
        with torch.no_grad():
            capture = loaded.model.forward_with_attention(x)
        assert_close(capture.output, expected)
        assert_attention(capture.attention, maps)


# --- parallel blocks -----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=by_width(["vit_small_patch16_18x2_224", "vit_base_patch16_18x2_224"]))
def parallel(request, tmp_path_factory):
    ref = timm_model(request.param, depth=2, dynamic_img_size=True)
    return ref, vit.load(saved(ref, tmp_path_factory.mktemp("parallel")))


def test_parallel_output_and_every_blocks_attention_equal_timm(parallel):
    """Branch j's H heads are heads j·H … j·H + H − 1 of ours; every map equals timm's branch's."""
    ref, loaded = parallel
    cfg = loaded.config
    H = ref.blocks[0].attns[0].attn.num_heads
    assert (cfg.parallel, cfg.num_heads, cfg.head_dim, cfg.family) == (2, 2 * H, cfg.embed_dim // H, "parallel")
    assert not cfg.layer_scale and cfg.mlp_dim == 8 * cfg.embed_dim      # two MLPs of 4·D, side by side
    for size in [(224, 224), (240, 288)]:          # the table upsampled (timm's antialiasing has nothing to smooth)
        x = images(2, size)
        branches = [b for blk in ref.blocks for b in (blk.attns[0].attn, blk.attns[1].attn)]
        with Maps(branches) as maps, torch.no_grad():
            expected = ref(x)
        with torch.no_grad():
            capture = loaded.model.forward_with_attention(x)
            plain = loaded.model(x)
        assert_close(capture.output, expected, f"output at {size}")
        assert_close(plain, expected, f"fused forward at {size}")
        assert_attention(capture.attention, [torch.cat(maps[2 * i:2 * i + 2], dim=1) for i in range(2)])


def test_parallel_preprocessing_is_timms_vit_config(parallel):
    p = parallel[1].preprocess
    assert (p.crop, p.resize, p.mean, p.std) == ((224, 224), 248, (0.5,) * 3, (0.5,) * 3)


# --- NaFlexViT -----------------------------------------------------------------------------------------------------

NAFLEX = {  # architecture -> (timm kwargs of a small model, sidecar, what ours reads)
    "naflexvit_base_patch16_map": (dict(embed_dim=192, num_heads=3), None,
                                   dict(num_reg_tokens=1, readout="map", pos_embed_interp="bicubic",
                                        pos_embed_ar_preserving=False, mlp_act="gelu", layer_scale=True)),
    "naflexvit_base_patch16_siglip": (dict(embed_dim=192, num_heads=3), None,
                                      dict(num_reg_tokens=0, readout="map", pos_embed_interp="bilinear",
                                           pos_embed_ar_preserving=False, mlp_act="gelu_tanh", layer_scale=False)),
    "naflexvit_base_patch16_par_gap": (dict(embed_dim=192, num_heads=3), dict(pos_embed_ar_preserving=True),
                                       dict(num_reg_tokens=4, readout="mean", fc_norm=True,
                                            pos_embed_ar_preserving=True, layer_scale=True)),
    "naflexvit_base_patch16_gap": (dict(embed_dim=192, num_heads=3), dict(pos_embed_ar_preserving=False),
                                   dict(num_reg_tokens=4, readout="mean", pos_embed_ar_preserving=False)),
}


@pytest.fixture(scope="module")
def naflex(tmp_path_factory):
    cache = {}

    def get(name):
        if name not in cache:
            kw, sidecar, _ = NAFLEX[name]
            ref = timm_model(name, depth=2, **kw)
            cache[name] = ref, vit.load(saved(ref, tmp_path_factory.mktemp("naflex"), sidecar=sidecar))
        return cache[name]
    return get


def naflex_batch(x: torch.Tensor, patch: int, length: int) -> dict:
    """Photos of any shapes as timm's NaFlex loader batches them: each patchified (P, P, C), with (row, column)
    coordinates, padded to ``length`` patches, ``patch_valid`` false on the padding."""
    rows = []
    for img in x:
        patches, coord, valid = patchify_image(img, (patch, patch))
        pad = length - patches.shape[0]
        rows.append((torch.cat([patches, patches.new_zeros(pad, patches.shape[1])]),
                     torch.cat([coord, coord.new_zeros(pad, 2)]), torch.cat([valid, valid.new_zeros(pad)])))
    return {k: torch.stack([r[i] for r in rows]) for i, k in enumerate(("patches", "patch_coord", "patch_valid"))}


@pytest.mark.parametrize("name", sorted(NAFLEX))
def test_naflex_output_and_every_blocks_attention_equal_timm(name, naflex):
    ref, loaded = naflex(name)
    cfg = loaded.config
    assert cfg.pos_embed_grid == (16, 16) and not cfg.pos_embed_prefix and cfg.pos_embed_antialias
    assert cfg.img_size == (384, 384) and cfg.family == "naflex"
    assert {k: getattr(cfg, k) for k in NAFLEX[name][2]} == NAFLEX[name][2]
    n_pre = cfg.num_prefix_tokens
    for size in [(384, 384), (256, 256), (160, 288), (400, 224)]:   # native (upsampled table), the table's, others
        x = images(1, size)
        n = (size[0] // 16) * (size[1] // 16)
        with Maps([blk.attn for blk in ref.blocks]) as maps, torch.no_grad():
            expected = ref(naflex_batch(x, 16, n + 7))              # NaFlex mode, 7 padding patches masked
            square = ref(x) if size[0] == size[1] else expected      # the standard mode too, where timm has it
        with torch.no_grad():
            capture = loaded.model.forward_with_attention(x)
            plain = loaded.model(x)
        assert_close(capture.output, expected, f"output at {size}")
        assert_close(plain, square, f"fused forward at {size}")
        T = n_pre + n
        assert_attention(capture.attention, [m[:, :, :T, :T] for m in maps[:2]])
        assert all(float(m[:, :, :T, T:].abs().max()) == 0.0 for m in maps[:2])   # the padding got no weight


def test_a_naflex_batch_of_two_shapes_is_each_photo_alone(naflex):
    """Two photos of different shapes padded into one timm batch: each output is ours on that photo alone."""
    ref, loaded = naflex("naflexvit_base_patch16_par_gap")
    wide, tall = images(1, (160, 288), seed=2), images(1, (288, 176), seed=3)
    rows = [naflex_batch(p, 16, 200) for p in (wide, tall)]
    batch = {k: torch.cat([r[k] for r in rows]) for k in rows[0]}
    with torch.no_grad():
        expected = ref(batch)
        assert_close(loaded.model(wide), expected[:1])
        assert_close(loaded.model(tall), expected[1:])


def test_naflex_gap_and_par_gap_are_refused_until_told_and_the_answer_matters(naflex, tmp_path):
    """Their tensors are the same; the refusal names the fact and how to give it; each answer followed gives the
    architecture it names, and the other answer a different model on a non-square photo."""
    ref, loaded = naflex("naflexvit_base_patch16_par_gap")
    bare = saved(ref, tmp_path)
    with pytest.raises(ValueError, match=r"both naflexvit_base_patch16_gap and naflexvit_base_patch16_par_gap.*"
                                         r"pos_embed_ar_preserving"):
        vit.load(bare)
    x = images(1, (160, 288))
    with torch.no_grad():
        expected = ref(naflex_batch(x, 16, 180))
        assert_close(vit.load(bare, pos_embed_ar_preserving=True).model(x), expected)
        other = vit.load(bare, pos_embed_ar_preserving=False).model(x)
    assert (other - expected).abs().max() > 1e-3 * expected.abs().max()


def test_naflex_preprocessing_is_timms_naflex_transform(naflex):
    """Each photo at its aspect ratio in at most 576 patches (384 / 16 squared), bicubic, 0.5/0.5, no crop."""
    p = naflex("naflexvit_base_patch16_map")[1].preprocess
    assert (p.resize_mode, p.resize, p.patch, p.crop, p.interpolation, p.mean) == (
        "patches", 576, 16, (384, 384), "bicubic", (0.5,) * 3)
    for w, h in ((640, 480), (480, 640), (333, 1000), (50, 60)):
        assert p.input_size((w, h)) == get_image_size_for_seq((h, w), 16, 576)[1]


def test_naflex_layouts_not_reproduced_are_refused(tmp_path):
    factorized = timm_model("naflexvit_base_patch16_parfac_gap", depth=1, embed_dim=192, num_heads=3)
    with pytest.raises(ValueError, match="factorized position embeddings"):
        vit.load(saved(factorized, tmp_path, "parfac"))
    radio = timm_model("naflexvit_base_patch16_radio_v3", depth=1, embed_dim=192, num_heads=3)
    with pytest.raises(ValueError, match="without a final LayerNorm"):
        vit.load(saved(radio, tmp_path, "radio"))


def test_a_timm_hub_folder_names_the_naflex_architecture(naflex, tmp_path):
    """config.json's architecture settles what the tensors cannot (par_gap: aspect-preserving), and its
    pretrained_cfg gives the NaFlex preprocessing."""
    ref, _ = naflex("naflexvit_base_patch16_par_gap")
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps({    # as timm's save_for_hf writes it: what it was made with
        "architecture": "naflexvit_base_patch16_par_gap", "num_classes": 1000,
        "model_args": {"depth": 2, **NAFLEX["naflexvit_base_patch16_par_gap"][0]},
        "pretrained_cfg": {"input_size": [3, 384, 384], "crop_pct": 1.0, "interpolation": "bicubic",
                           "mean": [0.5] * 3, "std": [0.5] * 3}}))
    loaded = vit.load(tmp_path)
    assert loaded.config.pos_embed_ar_preserving and loaded.preprocess.resize_mode == "patches"
    x = images(1, (160, 288))
    with torch.no_grad():
        assert_close(loaded.model(x), ref(naflex_batch(x, 16, 180)))


def test_a_non_square_naflex_table_keeps_its_own_grid(tmp_path):
    """A table learnt on a 12×20 grid (NaFlexVitCfg.pos_embed_grid_size) is resized from that grid, as timm does."""
    ref = timm_model("naflexvit_base_patch16_map", depth=2, embed_dim=192, num_heads=3, pos_embed_grid_size=(12, 20))
    loaded = vit.load(saved(ref, tmp_path))
    assert loaded.config.pos_embed_grid == (12, 20)
    for size in [(192, 320), (160, 288), (400, 224)]:
        x = images(1, size)
        n = (size[0] // 16) * (size[1] // 16)
        with torch.no_grad():
            assert_close(loaded.model(x), ref(naflex_batch(x, 16, n + 3)), f"output at {size}")


def test_what_each_bare_file_says_it_assumed(relpos, parallel, naflex, tmp_path):
    """Facts identified from what distinguishes timm's models, not read from the file, are listed in
    ``LoadedModel.assumptions``; what the tensors show (the relpos heads: the MLP's outputs) is not."""
    keys = lambda loaded: {a.key for a in loaded.assumptions}          # noqa: E731
    assert keys(relpos("vit_relpos_small_patch16_224")[1]) == {"img_size_relpos", "preprocess", "labels"}
    assert keys(relpos("vit_relpos_small_patch16_rpn_224")[1]) == {"img_size_relpos", "block_order", "preprocess",
                                                                    "labels"}
    assert {"heads_parallel", "preprocess"} <= keys(parallel[1]) and "heads_known" not in keys(parallel[1])
    assert keys(naflex("naflexvit_base_patch16_siglip")[1]) >= {"img_size_naflex", "naflex_resize", "act_naflex"}
    said = next(a for a in naflex("naflexvit_base_patch16_par_gap")[1].assumptions if a.key == "naflex_resize")
    assert "bicubic, antialiased, to a square of the longer side" in said
