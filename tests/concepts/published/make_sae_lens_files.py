"""Writes the sae-lens SAEs that tests/concepts/test_published.py opens, with sae-lens' own code, and what sae-lens'
own encode and decode give on fixed tokens (expected.safetensors). sae-lens is not a test requirement (its
dependencies weigh about 480 MB); run this where it is installed, from the repository root, to write them again:

    pip install sae-lens && python tests/concepts/published/make_sae_lens_files.py

Written with sae-lens 6.54.12. Every SAE has 16 inputs and 32 latents, every weight perturbed (no zero bias hides a
wrong mapping): a top-k SAE on the stream after block 1 with decoder-norm rescaling, a JumpReLU SAE on block 0's MLP
output, a ReLU SAE on the stream entering block 1 under sae-lens' run-time layer norm with b_dec not subtracted from
the input, and one on every head's output before merging (blocks.0.attn.hook_z), which the tests expect refused.
"""
from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import save_file
from sae_lens import (JumpReLUSAE, JumpReLUSAEConfig, StandardSAE, StandardSAEConfig, TopKSAE, TopKSAEConfig,
                      __version__)
from sae_lens.saes.sae import SAEMetadata

HERE = Path(__file__).resolve().parent
D_IN, D_SAE = 16, 32


def perturbed(sae, seed: int):
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in sae.named_parameters():
            p.copy_(torch.randn_like(p) * (0.3 if name.startswith("W") else 0.5))
        if hasattr(sae, "threshold"):
            sae.threshold.copy_(torch.rand(D_SAE) * 0.5)
    return sae


def main() -> None:
    meta = lambda hook: SAEMetadata(hook_name=hook, model_name="tiny-vit")          # noqa: E731
    saes = {
        "topk": perturbed(TopKSAE(TopKSAEConfig(d_in=D_IN, d_sae=D_SAE, k=5, rescale_acts_by_decoder_norm=True,
                                                metadata=meta("blocks.1.hook_resid_post"))), 1),
        "jumprelu": perturbed(JumpReLUSAE(JumpReLUSAEConfig(d_in=D_IN, d_sae=D_SAE,
                                                            metadata=meta("blocks.0.hook_mlp_out"))), 2),
        "standard_layer_norm": perturbed(StandardSAE(StandardSAEConfig(
            d_in=D_IN, d_sae=D_SAE, normalize_activations="layer_norm", apply_b_dec_to_input=False,
            metadata=meta("blocks.1.hook_resid_pre"))), 3),
        "hook_z": perturbed(StandardSAE(StandardSAEConfig(d_in=D_IN, d_sae=D_SAE,
                                                          metadata=meta("blocks.0.attn.hook_z"))), 4),
    }
    x = torch.randn(64, D_IN, generator=torch.Generator().manual_seed(5)) * 2 + 0.5
    expected = {"tokens": x}
    for name, sae in saes.items():
        sae.save_model(HERE / f"sae_lens_{name}")
        if name != "hook_z":
            with torch.no_grad():
                codes = sae.encode(x)
                expected[f"{name}.codes"] = codes
                expected[f"{name}.reconstruction"] = sae.decode(codes)
    save_file(expected, HERE / "sae_lens_expected.safetensors", metadata={"sae_lens_version": __version__})
    print(f"wrote {len(saes)} SAEs with sae-lens {__version__} to {HERE}")


if __name__ == "__main__":
    main()
