"""``python -m viz``: see viz/cli/__init__.py."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
