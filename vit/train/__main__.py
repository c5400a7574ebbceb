"""``python -m vit.train``: parse the command line, train, and say where the result is and how to open it."""
from __future__ import annotations

import sys

from .options import parse_args
from .trainer import RunFiles, fit


def main(argv: list[str] | None = None) -> int:
    opts, explicit = parse_args(argv)
    try:
        result = fit(opts, explicit)
    except (ValueError, FileNotFoundError) as e:  # bad input: a message, not a traceback
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        last = RunFiles.next_to(opts.out).last
        saved = f"finished epochs are saved in {last}; " if last.is_file() else ""
        print(f"\ninterrupted: {saved}continue with: python -m vit.train --out {opts.out} --resume", file=sys.stderr)
        return 130
    best = result.best
    print(f"best: epoch {best['epoch']}, validation accuracy {best['val_acc']:.1%} -> {result.files.best}\n"
          f"report: {result.files.metrics}, {result.files.curves}\n"
          f"open it in the app: python app.py --weights {result.files.best}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
