"""The Video tab: where a video model looks in each sampled frame (its readout's rollout through space and time), how
far in time and in space each head attends (``view``), and its texts (``texts``)."""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
