"""Maps and rendering for Vision Transformer attention: numpy arrays in, numpy arrays or PIL images out. No Gradio.

Three kinds of part, each importing only from the kinds above it in this list (``tests/design`` keeps it so):

- **what every tab shares**: ``records`` (``Analysis``: one record for every architecture, ``ModelArrays``),
  ``cache`` (THE cache bounded in bytes), ``i18n`` (the catalogue of texts and ``t``), ``drawing`` (colours,
  overlays, grids, plots, fonts, the phone's sizes), ``maps`` (the class-agnostic maps from attention arrays:
  rollout, attention, readout, windows, distance, norms, the attention source every view reads), ``analysis``
  (running a model for an ``Analysis``, for any architecture: ``vit.architecture`` says how), ``panels`` (which
  numbers the options give, how a map is drawn at display size, the command line's options), ``controls`` (the
  page's control values and session);
- **one slice per tab of the page**, its Gradio-free view (for the page, the command line and the data-set run
  alike) and its texts side by side: ``rollout``, ``attention``, ``heads``, ``query``, ``distance``, ``norms``,
  ``position``, ``model``, ``learn``, ``features``, ``explain``, ``trust``, ``inside``, ``compare``, ``concepts``, ``video``;
- **the front ends**: ``explorer`` (the page's Gradio-free side above the tabs: its summary line and a new photo's
  pictures; the page itself is ``vit_explorer``), ``cli`` (``python -m viz``, ``python -m viz.dynamics``) and
  ``dataset`` (``python -m viz FOLDER``: batches, statistics streamed, torchrun, ``--resume``).
"""
from .records import Analysis, ModelArrays
# every tab's texts in the one catalogue, whichever part of viz is imported first
from . import (attention, compare, concepts, distance, explain, features, heads, inside, learn, model,  # noqa: F401
               norms, position, query, rollout, trust, video)

__all__ = ["Analysis", "ModelArrays"]
