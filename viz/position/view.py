"""The Position embeddings tab: the ViT paper's Figure 7, centre (how similar each patch's position embedding is to
every other's; a rotary model's: the similarity its rotation implies; a model with neither: the sentence why) and
left (the principal components of the patch-embedding filters), drawn once per model and language
(``position_panel``, ``filters_panel``, ``model_panels``: the command line's files of them)."""
from __future__ import annotations

import numpy as np
from PIL import Image

from ..drawing import plots, render, screens
from ..drawing.grids import tile_images
from ..i18n import t
from ..maps import embeddings
from ..panels.select import position_similarity_of
from ..records import ModelArrays


def position_panel(m: ModelArrays, lang: str = "en", narrow: bool = False) -> Image.Image:
    """Figure 7, centre: position-embedding similarity, one tile per patch (a full matplotlib draw, ~0.1 s:
    render it once per model and language); a rotary model without a table gets the similarity its rotation implies
    under a title that says so, a model with neither a panel that says why there is nothing to show."""
    return _position_image(position_similarity_of(m), m.native_grid, lang, narrow, m.rotary_kernel)


def _position_image(similarity: np.ndarray | None, grid: tuple[int, int], lang: str = "en", narrow: bool = False,
                    rotary: np.ndarray | None = None) -> Image.Image:
    if similarity is None and rotary is not None:
        return plots.figure_to_image(plots.position_similarity_plot(rotary, grid, t("title.rotary_kernel", lang),
                                                                    lang=lang, narrow=narrow))
    if similarity is None:
        width = screens.PHONE_WIDTH if narrow else 420
        return render.message_image(t("note.no_position_embeddings", lang), (width, 200), 14, lang)
    return plots.figure_to_image(plots.position_similarity_plot(similarity, grid, lang=lang, narrow=narrow))


def filters_panel(m: ModelArrays, count: int = 28) -> Image.Image:
    """Figure 7, left: principal components of the patch-embedding filters, 7 per row."""
    tiles, _ = embeddings.embedding_filter_components(m.patch_weight, count)
    return tile_images(tiles, cols=7, scale=max(1, 64 // m.patch_size))


def model_panels(m: ModelArrays, lang: str = "en") -> tuple[dict[str, Image.Image], dict[str, np.ndarray]]:
    """The panels that depend on the checkpoint only (Figure 7 left and centre), to render once per model
    -> ({name: image}, {name: array})."""
    similarity = position_similarity_of(m)
    arrays = {"pos_similarity": similarity} if similarity is not None else {}
    if similarity is None and m.rotary_kernel is not None:
        arrays["rotary_kernel"] = m.rotary_kernel
    return {"filters": filters_panel(m),
            "pos_similarity": _position_image(similarity, m.native_grid, lang, rotary=m.rotary_kernel)}, arrays
