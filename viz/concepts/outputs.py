"""``python -m viz IMAGE --concepts DIR``: per image, concepts.png (the photo's 8 strongest latents, each as a map
over the photo with its top patches from the training folder beside it), ``concepts`` (8, gh, gw) and
``concept_ids`` (8,) in attention.npz, and result.json's "concepts": [{"latent", "mean", "max", "label"}], strongest
first (``viz.concepts.view``). DIR is an SAE folder: trained by ``python -m viz.concepts train``, or sae-lens' or
ViT-Prisma's saved SAE."""
from __future__ import annotations

import numpy as np

from ..records import Analysis
from .view import STRONGEST, ConceptsSource, concept_maps, open_concepts, photo_concepts, strongest, strongest_view


def concepts_request(args, loaded) -> ConceptsSource | None:
    """--concepts DIR -> the SAE opened for this model (None without the option); ValueError says what is wrong."""
    if not getattr(args, "concepts", None):
        return None
    if args.compare:
        raise ValueError("--concepts reads one model's tokens: leave out --compare (or run them apart).")
    try:
        return open_concepts(args.concepts, loaded, lang=args.lang)
    except (ValueError, OSError) as error:
        raise ValueError(f"--concepts {args.concepts}: {error}") from None


def concepts_outputs(loaded, source: ConceptsSource, a: Analysis, o) -> tuple[dict, dict, list[dict]]:
    """One image's concepts picture, arrays and result.json entry -> ({name: image}, {name: array}, entry)."""
    pc = photo_concepts(loaded, source, a.image)
    concepts = strongest(pc, source, STRONGEST)
    ids = [c.latent for c in concepts]
    images = {"concepts": strongest_view(source, pc, STRONGEST, cmap=o.cmap, alpha=o.alpha, lang=o.lang)}
    arrays = {"concepts": concept_maps(pc, ids), "concept_ids": np.array(ids, dtype=np.int64)}
    return images, arrays, [c.to_dict() for c in concepts]
