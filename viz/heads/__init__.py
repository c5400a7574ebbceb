"""The All heads tab: every layer's and head's attention, one grid per stage (``grid``), what a click tells (``view``), and its texts (``texts``)."""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
