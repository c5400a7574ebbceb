"""Protects the published SAEs (``viz.concepts.published``): sae-lens' saved format read from files written by
sae-lens' own ``save_model`` (tests/concepts/published/, made by make_sae_lens_files.py with sae-lens 6.54.12, which
is not a test requirement), its codes and reconstructions equal to what sae-lens' own encode and decode gave on the
same tokens; ViT-Prisma's layout (config.json + weights.pt, its code does not install here) built as its
``save_config`` and ``torch.save(state_dict)`` write it, equal to its encoder and decoder written out from its source;
every hook name that maps and every one refused with its reason; our own format saved and read back."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from viz.concepts.published import from_prisma, map_hook, open_sae
from viz.concepts.sae import SaeInfo, SparseAutoencoder

HERE = Path(__file__).resolve().parent / "published"
EXPECTED = load_file(HERE / "sae_lens_expected.safetensors")
RTOL, ATOL = 1e-5, 1e-6


@pytest.mark.parametrize("name, layer, hook, kind", [("topk", 1, "residual", "topk"), ("jumprelu", 0, "mlp", "jumprelu"),
                                                    ("standard_layer_norm", 0, "residual", "relu")])
def test_sae_lens_files_read_as_sae_lens_encodes_and_decodes(name, layer, hook, kind):
    sae = open_sae(HERE / f"sae_lens_{name}")
    assert (sae.info.layer, sae.info.hook_point, sae.kind, sae.info.source) == (layer, hook, kind, "sae-lens")
    assert sae.info.model == "tiny-vit" and (sae.d_model, sae.latents) == (16, 32)
    x = EXPECTED["tokens"]
    codes = sae.encode(x)
    torch.testing.assert_close(codes, EXPECTED[f"{name}.codes"], rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(sae.decode(codes, x), EXPECTED[f"{name}.reconstruction"], rtol=RTOL, atol=ATOL)
    assert (codes > 0).any() and (codes == 0).any()                     # the activations did something


def test_a_sae_lens_file_opens_from_any_of_its_files():
    assert open_sae(HERE / "sae_lens_topk" / "cfg.json").info.layer == 1


def test_an_sae_on_heads_before_merging_is_refused_with_the_reason():
    with pytest.raises(ValueError, match=r"'blocks.0.attn.hook_z', every head's output of block 0 before the heads "
                                         r"are merged and projected, which is not one of the hook points"):
        open_sae(HERE / "sae_lens_hook_z")


@pytest.mark.parametrize("name, expected", [("blocks.3.hook_resid_post", (3, "residual")),
                                            ("blocks.3.hook_resid_pre", (2, "residual")),
                                            ("blocks.0.hook_attn_out", (0, "attention")),
                                            ("blocks.11.hook_mlp_out", (11, "mlp"))])
def test_hook_names_that_map(name, expected):
    assert map_hook(name) == expected


@pytest.mark.parametrize("name, reason", [
    ("blocks.0.hook_resid_pre", "the stream entering block 0 \\(the embedding\\)"),
    ("blocks.4.hook_resid_mid", "the stream between block 4's attention and its MLP"),
    ("blocks.2.ln2.hook_normalized", "block 2's normalised input to its MLP"),
    ("blocks.2.mlp.hook_post", "block 2's MLP hidden units after the activation"),
    ("hook_embed", "not inside a block"),
    ("blocks.1.something_else", "'something_else' of block 1")])
def test_hook_names_that_do_not_map_are_refused_with_what_they_read(name, reason):
    with pytest.raises(ValueError, match=reason):
        map_hook(name)


def test_a_scaling_sae_lens_had_not_folded_is_refused(tmp_path):
    folder = tmp_path / "sae"
    folder.mkdir()
    cfg = json.loads((HERE / "sae_lens_topk" / "cfg.json").read_text())
    (folder / "cfg.json").write_text(json.dumps({**cfg, "normalize_activations": "expected_average_only_in"}))
    (folder / "sae_weights.safetensors").write_bytes((HERE / "sae_lens_topk" / "sae_weights.safetensors").read_bytes())
    with pytest.raises(ValueError, match="folds this scaling into the weights when training ends"):
        open_sae(folder)


# --- ViT-Prisma ------------------------------------------------------------------------------------------------------
def prisma_folder(tmp_path: Path, activation: str = "topk", normalise: str = "layer_norm", **config) -> Path:
    """A ViT-Prisma SAE as ``VisionModelSAERunnerConfig.save_config`` and ``torch.save(sae.state_dict())`` leave it
    (the fields it reads; hook_point is a property, not saved)."""
    torch.manual_seed(7)
    folder = tmp_path / "prisma"
    folder.mkdir(parents=True)
    state = {"W_enc": torch.randn(16, 32) * 0.3, "b_enc": torch.randn(32) * 0.5, "W_dec": torch.randn(32, 16) * 0.3,
             "b_dec": torch.randn(16) * 0.5}
    torch.save(state, folder / "weights.pt")
    cfg = {"model_class_name": "HookedViT", "model_name": "open-clip:laion/CLIP-ViT-B-32-DataComp.XL-s13B-b90K",
           "hook_point_layer": 1, "layer_subtype": "hook_resid_post", "hook_point_head_index": None,
           "architecture": "standard", "d_in": 16, "expansion_factor": 2, "activation_fn_str": activation,
           "activation_fn_kwargs": {"k": 6} if activation == "topk" else {}, "cls_token_only": False,
           "use_patches_only": True, "normalize_activations": normalise, "is_transcoder": False, "_dtype": "float32",
           "_device": "cpu", **config}
    (folder / "config.json").write_text(json.dumps(cfg, indent=4))
    return folder


def prisma_reference(state: dict, x: torch.Tensor, k: int | None, normalise: str) -> tuple[torch.Tensor, torch.Tensor]:
    """ViT-Prisma's StandardSparseAutoencoder.encode and decode, written out from its source."""
    if normalise == "layer_norm":
        mu = x.mean(dim=-1, keepdim=True)
        centred = x - mu
        std = centred.std(dim=-1, keepdim=True)
        x_in = centred / (std + 1e-5)
    else:
        x_in = x
    hidden_pre = torch.einsum("...i,ij->...j", x_in - state["b_dec"], state["W_enc"]) + state["b_enc"]
    if k is None:
        acts = torch.relu(hidden_pre)
    else:
        top = torch.topk(hidden_pre, k=k, dim=-1)
        acts = torch.zeros_like(hidden_pre).scatter_(-1, top.indices, torch.relu(top.values))
    out = torch.einsum("...j,ji->...i", acts, state["W_dec"]) + state["b_dec"]
    if normalise == "layer_norm":
        out = out * std + mu
    return acts, out


@pytest.mark.parametrize("activation, normalise", [("topk", "layer_norm"), ("relu", "none")])
def test_a_vit_prisma_sae_encodes_and_decodes_as_its_source_does(tmp_path, activation, normalise):
    folder = prisma_folder(tmp_path, activation, normalise)
    sae = open_sae(folder)
    assert (sae.info.layer, sae.info.hook_point, sae.info.source, sae.kind) == (1, "residual", "vit-prisma",
                                                                                 activation)
    x = EXPECTED["tokens"]
    state = torch.load(folder / "weights.pt", weights_only=True)
    codes, reconstruction = prisma_reference(state, x, 6 if activation == "topk" else None, normalise)
    torch.testing.assert_close(sae.encode(x), codes, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(sae.reconstruct(x), reconstruction, rtol=RTOL, atol=ATOL)


def test_vit_prisma_saes_that_do_not_fit_are_refused(tmp_path):
    with pytest.raises(ValueError, match="trained on the CLS token alone"):
        from_prisma(prisma_folder(tmp_path / "a", cls_token_only=True))
    with pytest.raises(ValueError, match="'ln2.hook_normalized'|block 1's normalised input to its MLP"):
        from_prisma(prisma_folder(tmp_path / "b", layer_subtype="ln2.hook_normalized"))
    with pytest.raises(ValueError, match="a transcoder"):
        from_prisma(prisma_folder(tmp_path / "c", is_transcoder=True))


class RunnerConfig:
    """Stands for ViT-Prisma's VisionModelSAERunnerConfig, pickled with the weights by its older save_model."""
    d_in = 16


def test_a_pickled_vit_prisma_file_is_never_unpickled(tmp_path):
    """Its older ``save_model`` pickles the config object with the weights: opening it would run code."""
    folder = prisma_folder(tmp_path)
    torch.save({"cfg": RunnerConfig(), "state_dict": torch.load(folder / "weights.pt", weights_only=True)},
               folder / "weights.pt")
    with pytest.raises(ValueError, match="Refusing to load .*weights.pt: it is a pickle that holds Python objects"):
        open_sae(folder)


def test_a_folder_without_an_sae_says_what_was_expected(tmp_path):
    with pytest.raises(ValueError, match="expected sae.json and sae.safetensors .* cfg.json and sae_weights.safetensors "
                                         ".* config.json and weights.pt"):
        open_sae(tmp_path)


def test_our_format_reads_back_what_was_saved(tmp_path):
    torch.manual_seed(0)
    sae = SparseAutoencoder(torch.randn(16, 32), torch.randn(32), torch.randn(32, 16), torch.zeros(16), "batchtopk", 4,
                            torch.tensor([0.3]), "centre_scale", torch.randn(16), 0.7,
                            info=SaeInfo(1, "attention", "tiny", "w.pt", "abc", extra={"training": {"epochs": 2}}))
    sae.save(tmp_path)
    back = open_sae(tmp_path)
    x = EXPECTED["tokens"]
    assert torch.equal(back.encode(x), sae.encode(x)) and torch.equal(back.reconstruct(x), sae.reconstruct(x))
    assert back.config() == sae.config() and back.info.extra["training"] == {"epochs": 2}
