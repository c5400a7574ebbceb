"""The Position embeddings tab: the ViT paper's Figure 7, centre and left (``view``), and its texts (``texts``)."""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
