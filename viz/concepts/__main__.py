"""``python -m viz.concepts``: see viz/cli/concepts.py."""
import sys

from ..cli.concepts import main

if __name__ == "__main__":
    sys.exit(main())
