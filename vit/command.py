"""The name a command was started by, for its ``usage:`` line: the installed command (``vit-viz``), the module
(``python -m viz``) or the script (``python app.py``), whichever the person typed."""
from __future__ import annotations

import os
import sys

COMMANDS = {"vit-explorer": "vit_explorer", "vit-viz": "viz", "vit-train": "vit.train"}   # pyproject's scripts


def program(module: str, script: str | None = None) -> str:
    """How the running command was started, as the person typed it: an installed command of ``COMMANDS`` for
    ``module``, ``python SCRIPT`` when ``script`` (e.g. "app.py") was run, else ``python -m MODULE``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    for suffix in ("-script.py", ".exe"):            # what pip's launchers are called on Windows
        name = name.removesuffix(suffix)
    if COMMANDS.get(name) == module:
        return name
    if script is not None and name == script:
        return f"python {script}"
    return f"python -m {module}"
