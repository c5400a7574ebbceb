"""The Attention distance tab: every head's mean attention distance against depth (``view``), and its texts (``texts``)."""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
