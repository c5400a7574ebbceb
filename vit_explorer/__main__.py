"""``python -m vit_explorer [--weights PATH ...]``: the same command as ``python app.py``."""
from .server import main

main()
