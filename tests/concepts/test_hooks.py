"""Protects the hook points an SAE reads (``vit.inside.hooks``) on tiny random models of every family, against forward
hooks on the model's own modules: the stream after block L is the block's output, the attention branch is what ``ls1``
returns, the MLP branch what ``ls2`` returns; the identity edit is the model's own output; an edit equals the forward
pass recomputed with a forward hook that makes the same change at that layer (the hook returning the changed output),
for a direction removed from the patch tokens as switching a concept off does."""
from __future__ import annotations

import pytest
import torch

import tiny_models
from tiny_models import FAMILIES
from vit.inside.hooks import HOOK_POINTS, check_hook, continue_edited, hook_tokens, run_edited_at

MODULE = {"residual": None, "attention": "ls1", "mlp": "ls2"}     # what returns the hook point's tokens


def image(batch: int = 2, seed: int = 1) -> torch.Tensor:
    return torch.randn(batch, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


def module_at(model, layer: int, hook: str):
    block = model.blocks[layer]
    return block if MODULE[hook] is None else getattr(block, MODULE[hook])


def hooked(model, layer: int, hook: str, change=None):
    """(the tokens the module at the hook point returned, the model's output with ``change`` applied there)."""
    seen = {}

    def grab(module, inputs, output):
        out = output[0] if isinstance(output, tuple) else output
        seen["tokens"] = out.detach().clone()
        if change is None:
            return None
        new = change(out)
        return (new, *output[1:]) if isinstance(output, tuple) else new

    handle = module_at(model, layer, hook).register_forward_hook(grab)
    try:
        with torch.inference_mode():
            output = model(image())
    finally:
        handle.remove()
    return seen["tokens"], output


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_tokens_at_a_hook_point_are_what_the_module_returns(family):
    """Every hook point of every layer caught in one forward pass (the modules' hooks), against ``hook_tokens``."""
    model = tiny_models.tiny(0, **FAMILIES[family])
    seen, handles = {}, []
    for layer in range(len(model.blocks)):
        for hook in HOOK_POINTS:
            def keep(module, inputs, output, key=(layer, hook)):
                seen[key] = (output[0] if isinstance(output, tuple) else output).detach().clone()
            handles.append(module_at(model, layer, hook).register_forward_hook(keep))
    with torch.inference_mode():
        output = model(image())
    for handle in handles:
        handle.remove()
    for (layer, hook), expected in seen.items():
        torch.testing.assert_close(hook_tokens(model, image(), layer, hook).tokens, expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(run_edited_at(model, image(), 0, "mlp", lambda t: t), output, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("family", ["vit", "siglip", "beit", "relpos_rpn", "dinov3"])   # readouts, norms, scales
@pytest.mark.parametrize("hook", HOOK_POINTS)
def test_an_edit_equals_the_forward_recomputed_with_the_change_at_that_layer(family, hook):
    """A unit direction scaled by each patch token's own projection on it is removed from the patch tokens (what
    switching a latent off does to a layer's tokens), at every layer."""
    model = tiny_models.tiny(0, **FAMILIES[family])
    prefix = model.cfg.num_prefix_tokens
    direction = torch.nn.functional.normalize(torch.randn(model.cfg.embed_dim,
                                                          generator=torch.Generator().manual_seed(3)), dim=0)

    def remove(tokens):
        patches = tokens[:, prefix:]
        return torch.cat([tokens[:, :prefix], patches - (patches @ direction)[..., None] * direction], dim=1)

    for layer in range(len(model.blocks)):
        _, expected = hooked(model, layer, hook, remove)
        _, plain = hooked(model, layer, hook)
        edited = run_edited_at(model, image(), layer, hook, remove)
        torch.testing.assert_close(edited, expected, rtol=1e-5, atol=1e-6)
        if layer == 0:                                                    # (a CLS readout ignores the last patches)
            assert not torch.allclose(edited, plain, atol=1e-4)           # the edit changed something


def test_continuing_from_the_kept_stream_equals_running_from_the_images():
    model = tiny_models.tiny(0)
    read = hook_tokens(model, image(), 1, "mlp")
    edit = lambda t: 2 * t                                                # noqa: E731
    torch.testing.assert_close(continue_edited(model, read.stream, 1, "mlp", edit, read.positions),
                               run_edited_at(model, image(), 1, "mlp", edit))


def test_layers_and_hook_points_that_do_not_exist_are_named():
    model = tiny_models.tiny(0)
    assert check_hook(model, -1, "residual") == len(model.blocks) - 1
    with pytest.raises(ValueError, match="No layer 2! The model has layers 0 to 1"):
        hook_tokens(model, image(), 2, "residual")
    with pytest.raises(ValueError, match="Unknown hook point 'resid'! Expected one of residual, attention, mlp"):
        hook_tokens(model, image(), 0, "resid")


def test_the_edited_pass_keeps_the_attention_it_used():
    """The maps below the edited layer are the plain pass's, those above follow the edit; the output is the one the
    pass without maps gives."""
    model = tiny_models.tiny(0, depth=3)
    direction = torch.nn.functional.normalize(torch.randn(model.cfg.embed_dim,
                                                          generator=torch.Generator().manual_seed(3)), dim=0)
    remove = lambda t: t - (t @ direction)[..., None] * direction                      # noqa: E731
    with torch.inference_mode():
        plain = model.forward_with_attention(image()).attention                       # (B, L, H, T, T)
    output, maps = run_edited_at(model, image(), 1, "mlp", remove, attention=True)
    torch.testing.assert_close(output, run_edited_at(model, image(), 1, "mlp", remove), rtol=1e-5, atol=1e-6)
    assert len(maps) == 3
    for l in (0, 1):
        torch.testing.assert_close(maps[l], plain[:, l], rtol=1e-5, atol=1e-7)
    assert not torch.allclose(maps[2], plain[:, 2], atol=1e-4)
    _, same = run_edited_at(model, image(), 1, "mlp", lambda t: t, attention=True)
    torch.testing.assert_close(same[2], plain[:, 2], rtol=1e-5, atol=1e-7)
