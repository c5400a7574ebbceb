"""The model-side half of class-specific explanations: targets, relevance rules, and the gradient passes.

- ``targets``: ``Target`` (what is explained: ``score`` and ``probability`` of the model's output),
  ``ClassTarget`` and CLIP's ``TextTarget`` (the image–text score of a typed text; ``vit.clip.text_target``
  builds one); ``class_target`` parses a class name or index;
- ``rules``: AttnLRP / CP-LRP rules, one small module per module kind, and rule-wired views of a model;
- ``passes``: ``gradient_pass`` (every block's attention on its own layout and Grad-CAM's activation, with their
  gradients) and ``relevance_pass`` (LRP relevance per patch), one backward each, no weight gradients, for every
  architecture through the models' uniform interface;
- ``perturb``: ``forward_kept`` (the model on a subset of the patches, each keeping its position) and the
  cascading randomisation of the blocks (``cascading_randomization``): what the
  faithfulness scores and sanity checks of ``viz.trust`` run.

The formulas that turn these arrays into maps are in ``viz.explain``; ``viz.explain.explainer`` runs both.
"""
from .passes import GradientPass, Readout, RelevancePass, gradient_pass, readout, relevance_pass
from .perturb import cascading_randomization, forward_kept
from .rules import ATTN_LRP, CP_LRP, RULE_SETS, RuleSet
from .targets import ClassTarget, Target, TextTarget, class_target, close_classes

__all__ = ["ATTN_LRP", "CP_LRP", "ClassTarget", "GradientPass", "RULE_SETS", "Readout", "RelevancePass", "RuleSet",
           "Target", "TextTarget", "cascading_randomization", "class_target", "close_classes", "forward_kept",
           "gradient_pass", "readout", "relevance_pass"]
