"""``python -m viz.dynamics weights/NAME.snapshots photo.png --out DIR``: a model learning to see, one frame per
snapshot of a training run (the command: ``viz.cli.dynamics``; the frames: ``viz.compare.dynamics``)."""
import sys

from .cli.dynamics import main

if __name__ == "__main__":
    sys.exit(main())
