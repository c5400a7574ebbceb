"""The Patch query tab: where a clicked patch attends and who attends to it (``view``), and its texts (``texts``)."""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
