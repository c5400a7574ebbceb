"""The Token norms tab: every token's norm after each layer and the artifact tokens (``view``), and its texts (``texts``)."""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
