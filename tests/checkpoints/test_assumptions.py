"""Protects "nothing opens as a different model without saying what was assumed": ``LoadedModel.assumptions`` lists
what the loader took from a convention (heads from the width, a bare CLIP's or SigLIP's activation, the input size,
the preprocessing, the class names) and is empty when the file and its metadata say everything; the documented
pitfalls (a bare timm QuickGELU CLIP, SigLIP So400m's 16 heads at width 1152, an open_clip GELU model saved as a bare
state dict, SigLIP's mean-pooled towers) are identified or assumed aloud, and following the advice gives the
reference's output; the head counts by width and the activations by timm name equal timm's for every ViT it defines.
"""
from __future__ import annotations

import json
import warnings

import pytest
import timm
import torch
import transformers
from safetensors.torch import save_file
from timm.data import resolve_data_config

import vit
from reference_models import assert_close, images, open_clip_tiny, randomize_, save_timm
from vit.checkpoints.assumptions import ASSUMED, Assumption
from vit.checkpoints.infer import default_num_heads
from vit.checkpoints.pipelines import timm_preprocess
from vit.checkpoints.timm_names import plain_mlp_activation


def keys(loaded: vit.LoadedModel) -> list[str]:
    return [a.key for a in loaded.assumptions]


def timm_tiny(name: str, seed: int = 0, std: float = 0.02, **kwargs):
    torch.manual_seed(seed)
    return randomize_(timm.create_model(name, pretrained=False, **kwargs), std=std)


# --- what a file says, and what it does not ----------------------------------------------------------------------

def test_a_bare_timm_file_lists_every_assumption_with_its_remedy(tmp_path):
    ref = timm_tiny("vit_tiny_patch16_224", img_size=32, depth=1)
    loaded = vit.load(save_timm(ref, tmp_path))
    assert keys(loaded) == ["heads_known", "img_size", "labels", "preprocess"]
    assert all(isinstance(a, str) and a.endswith(".") for a in loaded.assumptions)
    heads, size, labels, prep = loaded.assumptions
    assert "3 assumed" in heads and 'give num_heads=N (to vit.load, or as {"config": {"num_heads": N}}' in heads
    assert "32×32 assumed from its 4 position embeddings as a square 2×2 grid" in size
    assert "ImageNet-1k" in labels
    assert "the timm convention for ViT" in prep and "mean (0.485, 0.456, 0.406)" in prep
    with torch.no_grad():
        assert_close(loaded.model(images(1, (32, 32))), ref(images(1, (32, 32))))


def test_nothing_is_assumed_when_the_metadata_says_it(tmp_path):
    """A sidecar giving heads, size, labels and preprocessing; a transformers folder with its processor and
    labels; our own format."""
    ref = timm_tiny("vit_tiny_patch16_224", img_size=32, depth=1, num_classes=3)
    path = save_timm(ref, tmp_path)
    (tmp_path / "model.json").write_text(json.dumps({"config": {"num_heads": 3, "img_size": [32, 32]},
                                                     "labels": ["a", "b", "c"],
                                                     "preprocess": {"timm": {"input_size": [3, 32, 32]}}}))
    assert vit.load(path).assumptions == []
    hf = transformers.ViTForImageClassification(transformers.ViTConfig(
        hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, image_size=32, patch_size=8,
        num_labels=2, id2label={0: "x", 1: "y"}))
    hf.save_pretrained(tmp_path / "hf")
    (tmp_path / "hf" / "preprocessor_config.json").write_text(json.dumps({"size": {"height": 32, "width": 32}}))
    assert vit.load(tmp_path / "hf").assumptions == []
    (tmp_path / "hf" / "preprocessor_config.json").unlink()
    assert keys(vit.load(tmp_path / "hf")) == ["processor"]
    assert "the defaults of ViTImageProcessor assumed" in vit.load(tmp_path / "hf").assumptions[0]
    model = vit.VisionTransformer(vit.variant("tiny", depth=1, img_size=32, num_classes=2))
    own = vit.save_checkpoint(tmp_path / "own.pt", model, ["p", "q"], vit.Preprocess(resize=32, crop=(32, 32)))
    assert vit.load(own).assumptions == []


def test_the_shared_checkpoints_are_known_so_nothing_is_assumed(augreg_weights):
    loaded = vit.load(augreg_weights)
    assert loaded.assumptions == [] and loaded.labels[0] == "tench"


def test_an_assumption_is_a_sentence_with_a_key_and_fields():
    a = Assumption("heads_known", heads=16, width=1152)
    assert a == ASSUMED["heads_known"].format(heads=16, width=1152) and (a.key, a.fields) == (
        "heads_known", {"heads": 16, "width": 1152})
    assert json.loads(json.dumps([a])) == [str(a)]
    import pickle
    again = pickle.loads(pickle.dumps(a))
    assert (again, again.key, again.fields) == (a, a.key, a.fields)


# --- the documented pitfalls ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def so400m(tmp_path_factory):
    ref = timm_tiny("vit_so400m_patch14_siglip_224", img_size=28, depth=1)
    folder = tmp_path_factory.mktemp("so400m")
    return ref, vit.load(save_timm(ref, folder))


def test_so400m_gets_its_16_heads_at_width_1152(so400m):
    """SigLIP So400m: 16 heads of 72 (64 per head would give 18); the file equals timm's, attention included."""
    ref, loaded = so400m
    assert ref.blocks[0].attn.num_heads == loaded.config.num_heads == 16 and loaded.config.embed_dim == 1152
    assert "heads_known" in keys(loaded) and "16 assumed, as the published ViTs 1152 wide" in loaded.assumptions[0]
    x = images(2, (28, 28))
    for blk in ref.blocks:
        blk.attn.fused_attn = False
    maps = []
    hook = ref.blocks[0].attn.attn_drop.register_forward_hook(lambda m, i, o: maps.append(i[0]))
    with torch.no_grad():
        out = ref(x)
        capture = loaded.model.forward_with_attention(x)
    hook.remove()
    assert_close(capture.output, out)
    assert_close(capture.attention[:, 0], maps[0], "attention of block 0")


def test_a_bare_timm_quickgelu_clip_is_assumed_gelu_and_the_advice_gives_timms_output(tmp_path):
    ref = timm_tiny("vit_base_patch16_clip_quickgelu_224", depth=2, embed_dim=64, num_heads=4, img_size=32,
                    num_classes=5, std=0.3)   # weights large enough for the activations to differ
    path = save_timm(ref, tmp_path, num_heads=4)
    loaded = vit.load(path)
    assert loaded.config.mlp_act == "gelu" and "act_clip" in keys(loaded)
    advice = next(a for a in loaded.assumptions if a.key == "act_clip")
    assert 'mlp_act="quick_gelu"' in advice
    x = images(2, (32, 32))
    with torch.no_grad():
        assert (loaded.model(x) - ref(x)).abs().max() > 1e-3 * ref(x).abs().max()   # 10× the parity tolerance
        (tmp_path / "model.json").write_text(json.dumps({"config": {"num_heads": 4, "mlp_act": "quick_gelu"}}))
        followed = vit.load(path)
        assert "act_clip" not in keys(followed)
        assert_close(followed.model(x), ref(x))


def test_an_open_clip_gelu_model_saved_bare_is_assumed_quickgelu_and_the_advice_gives_its_output(tmp_path):
    ref = open_clip_tiny(quick_gelu=False)
    torch.save(ref.state_dict(), tmp_path / "laion.pt")
    loaded = vit.load(tmp_path / "laion.pt")
    assert loaded.config.mlp_act == "quick_gelu" and "act_openai_clip" in keys(loaded)
    x = images(1, (64, 64))
    with torch.no_grad():
        expected = ref.encode_image(x)
        assert (loaded.model(x) - expected).abs().max() > 1e-3 * expected.abs().max()
        followed = vit.load(tmp_path / "laion.pt", mlp_act="gelu")
        assert "act_openai_clip" not in keys(followed) and followed.text.model.cfg.mlp_act == "gelu"
        assert_close(followed.model(x), expected)


def test_openai_clips_own_file_is_identified_by_its_archive_metadata(tmp_path):
    """OpenAI's state dict, saved from its TorchScript archive as the refusal of the archive advises, keeps
    input_resolution, context_length and vocab_size: QuickGELU is then known, not assumed."""
    ref = open_clip_tiny(quick_gelu=True)
    state = {**ref.state_dict(), "input_resolution": torch.tensor(64), "context_length": torch.tensor(77),
             "vocab_size": torch.tensor(49408)}
    torch.save(state, tmp_path / "openai.pt")
    loaded = vit.load(tmp_path / "openai.pt")
    assert loaded.config.mlp_act == "quick_gelu" and "act_openai_clip" not in keys(loaded)
    x = images(1, (64, 64))
    with torch.no_grad():
        assert_close(loaded.model(x), ref.encode_image(x))


@pytest.mark.parametrize("name", ["vit_base_patch16_siglip_gap_224", "vit_base_patch16_siglip_224"])
def test_siglip_towers_get_siglips_preprocessing_not_dinos(name, tmp_path):
    """A mean-pooled SigLIP tower has no CLS token, head or probe: it is not a DINO backbone (ImageNet's mean)."""
    ref = timm_tiny(name, depth=1, embed_dim=64, num_heads=4, img_size=32)
    loaded = vit.load(save_timm(ref, tmp_path, num_heads=4))
    assert loaded.format == "timm" and "act_siglip" in keys(loaded)
    expected = timm_preprocess(resolve_data_config({"input_size": (3, 32, 32)}, model=ref))
    assert loaded.preprocess == expected and loaded.preprocess.mean == (0.5, 0.5, 0.5)
    assert "the timm convention for SigLIP" in next(a for a in loaded.assumptions if a.key == "preprocess")
    x = images(2, (32, 32))
    with torch.no_grad():
        assert_close(loaded.model(x), ref(x))


def test_a_headless_vit_with_a_cls_token_is_still_dino(tmp_path):
    ref = timm_tiny("vit_small_patch16_224", depth=1, img_size=32, num_classes=0)
    loaded = vit.load(save_timm(ref, tmp_path))
    assert loaded.format == "dino" and loaded.preprocess.mean == (0.485, 0.456, 0.406)
    assert "the timm convention for DINO" in next(a for a in loaded.assumptions if a.key == "preprocess")


def test_ijepa_towers_keep_imagenets_mean(tmp_path):
    """timm's I-JEPA ViT-H (no CLS token, no head, width 1280) is evaluated with ImageNet's mean and std."""
    with torch.device("meta"):
        shapes = timm.create_model("vit_huge_patch14_gap_224", depth=1, img_size=28).state_dict()
    save_file({k: torch.zeros(v.shape) for k, v in shapes.items()}, str(tmp_path / "ijepa.safetensors"))
    loaded = vit.load(tmp_path / "ijepa.safetensors")
    assert loaded.preprocess.mean == (0.485, 0.456, 0.406) and loaded.config.num_heads == 16


# --- the rules against every architecture timm defines -------------------------------------------------------------

def test_known_widths_get_their_published_head_counts():
    assert default_num_heads(1152) == 16 and default_num_heads(1152, class_token=False) == 16        # So400m
    assert default_num_heads(1536) == 24 and default_num_heads(1536, class_token=False) == 16         # DINOv2-g, g-opt
    assert default_num_heads(1280) == 16 and default_num_heads(1408) == 16 and default_num_heads(1664) == 16
    assert default_num_heads(768, class_token=False, pooled_classifier=True) == 16   # vit_base_patch16_gap_224
    assert default_num_heads(640) == 10 and default_num_heads(896) == 14              # 64 per head otherwise


def timm_vits():
    """Every timm ViT architecture built on the meta device (no weights): (name, model)."""
    from timm.models.vision_transformer import VisionTransformer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in timm.list_models(["vit_*", "deit*"]):
            try:
                with torch.device("meta"):
                    model = timm.create_model(name)
            except Exception:   # hybrids that need another package's backbone
                continue
            if isinstance(model, VisionTransformer):
                yield name, model


@pytest.mark.slow
def test_every_timm_vit_gets_timms_heads_and_activation():
    """The head count from the tensors (width, CLS token, registers, head, fc_norm) and the activation from the
    architecture's name equal timm's, for every VisionTransformer timm 1.0 defines (hybrids and parallel blocks, which
    this explorer does not open, aside)."""
    checked = 0
    for name, m in timm_vits():
        blk = m.blocks[0]
        if not hasattr(blk, "mlp") or type(m.patch_embed).__name__ != "PatchEmbed":
            continue
        pooled = not m.has_class_token and m.num_classes > 0 and not m.num_reg_tokens and m.global_pool == "avg" \
            and isinstance(m.fc_norm, torch.nn.Identity)
        assert default_num_heads(m.embed_dim, m.has_class_token, pooled) == blk.attn.num_heads, name
        act = getattr(blk.mlp, "act", None)
        if type(blk.mlp).__name__ == "Mlp":   # gated MLPs show in their tensors
            expected = {"GELU": "gelu", "GELUTanh": "gelu_tanh", "QuickGELU": "quick_gelu"}[type(act).__name__]
            if type(act).__name__ == "GELU" and act.approximate == "tanh":
                expected = "gelu_tanh"
            assert plain_mlp_activation(name) == expected, name
        checked += 1
    assert checked >= 140
