"""The Model tab: the architecture as a table of steps with this photo's shapes (``view``), and its texts (``texts``)."""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
