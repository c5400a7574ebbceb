"""The class-agnostic maps, from attention arrays alone: token layout, rollout, raw attention and patch
queries, the ViT paper's Figure 7, token norms and high-norm artifacts, and per-image statistics (entropy,
attention shares); a Swin's windows, and rollout and GAE through its hierarchy (``hierarchy``)."""
