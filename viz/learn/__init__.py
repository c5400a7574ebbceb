"""The Learn tab: the guided walk through the forward pass (``walkthrough`` runs it, ``steps`` draws it, ``view`` shows a step), and its texts (``texts``)."""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
