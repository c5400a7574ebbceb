"""Calling the page's handlers directly, as Gradio does: a stepwise handler (a heavy job) is a generator that yields
after each step and returns its {output name: value}."""
from __future__ import annotations

import inspect


def finished(result):
    """A handler's {output name: value}: ``result`` itself, or a stepwise handler's generator run to its end."""
    if not inspect.isgenerator(result):
        return result
    while True:
        try:
            next(result)
        except StopIteration as end:
            return end.value
