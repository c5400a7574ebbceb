"""``python -m vit_explorer [--weights PATH ...]``: the same command as ``python app.py``."""
import sys

from .server import main

sys.argv[0] = "python -m vit_explorer"   # what --help and errors call the command
main()
