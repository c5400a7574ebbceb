"""Inside the model: what each layer predicts, what each head writes into the answer, and what breaks when a head
is removed or swapped with another photo's. The model side; ``viz.inside.job`` runs it for a photo and
``viz.inside`` draws it.

- ``stream``: the forward pass from the model's own modules, piece by piece (``trace``: the stream entering every
  block, every head's output before proj, every MLP branch, optionally attention, values and gradients),
  re-run with pieces replaced (``run_edited``) or continued from any block (``run_from``);
- ``readout``: the family's own readout (``Classes``, ``Score``, ``read``, ``read_patches``) and its linear form at
  one photo (``linear_readout``);
- ``lens``: the logit lens (``logit_lens``);
- ``dla``: direct logit attribution (``direct_logit_attribution``);
- ``ablation``: heads named ``L.H`` (``parse_heads``), zero or mean ablation (``ablate``, ``head_means``), head
  importance exact (``head_importance``) and by attribution patching (``head_importance_linear``);
- ``patching``: activation patching from another photo, per head exactly (``patch_heads``) and per stream position
  by attribution patching (``patch_residual_estimate``);
- ``hooks``: a layer's tokens at a hook point (the stream after block L, what its attention or its MLP adds:
  ``hook_tokens``) and the forward pass continued with them replaced (``continue_edited``, ``run_edited_at``).

Layers and heads are counted from 0. Nothing here changes the model or keeps state between calls.
"""
from .ablation import (ablate, ablation_edits, head_importance, head_importance_linear, head_importance_steps,
                       head_means, head_names, parse_heads)
from .dla import DirectLogitAttribution, direct_logit_attribution
from .hooks import HOOK_POINTS, HookRead, continue_edited, hook_tokens, run_edited_at
from .lens import Lens, logit_lens, rank_of
from .patching import patch_heads, patch_heads_steps, patch_residual_estimate, score_gap
from .readout import (Classes, NotLinear, Score, classes_for, linear_readout, read, read_patches, score_for,
                      why_not_linear)
from .stream import Trace, readout_rows, run_edited, run_from, trace

__all__ = ["Classes", "DirectLogitAttribution", "HOOK_POINTS", "HookRead", "Lens", "NotLinear", "Score", "Trace", "ablate", "ablation_edits",
           "classes_for", "continue_edited", "direct_logit_attribution", "head_importance", "head_importance_linear",
           "head_importance_steps", "head_means", "head_names", "hook_tokens", "linear_readout", "logit_lens", "parse_heads",
           "patch_heads", "patch_heads_steps", "patch_residual_estimate", "rank_of", "read", "read_patches",
           "readout_rows", "run_edited", "run_edited_at", "run_from", "score_for", "score_gap", "trace", "why_not_linear"]
