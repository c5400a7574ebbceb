"""The Rollout tab: attention rollout of the model's readout over the photo (``view``), and its texts (``texts``)."""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
