"""The Attention tab: one layer's attention of the readout, DINO's threshold mask (``view``), and its texts (``texts``)."""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
