"""The Concepts tab: what the model sees in the photo, read by a sparse autoencoder (SAE) on one layer's patch tokens
(``viz.concepts``): the photo's strongest latents, each as a map over the photo with the training photos' patches
where it fires most beside it; a latent's 64 strongest patches; the latents active at a clicked patch; and a latent
switched off or scaled, with the model's new top-5 and its rollout before and after.

The SAEs on offer are the server's (``python app.py --sae DIR``: ``state.listed_saes``); the box lists those made for
the session's model (its token width, a layer it has, and for an SAE trained here its weights), and what a visitor
picks passes the models' guard (``state.sae_source``): a public server opens only its list, a server for this
machine alone also an SAE folder typed into the box. Without one, the tab says how to train one and start the app
with it (the commands, with this model's name); browsing needs nothing beyond the base install.

Drawn only while it is open (a lazy tab: opening it, a new photo, model or language), from three caches shared by
every visitor: the SAEs opened for a model (``SOURCES``), a photo's codes at the SAE's layer (``PHOTOS``: the blocks
up to it, in the model's turn) and the edits (``EDITS``: the blocks after it, in the model's turn). A click on the
pictures, a latent picked and the opacity redraw from them. ``concepts_state`` remembers what is shown (``Shown``).
"""
from __future__ import annotations

import importlib.util
import json
import math
from dataclasses import dataclass, replace
import gradio as gr

from viz.cache import Cache
from viz.concepts import view
from viz.controls import AnalysisKey
from viz.i18n import language, t
from viz.panels.select import artifact_drop

from .. import state
from ..components import note, picture

ID = "concepts"
DRAWN = ("concepts_line", "concepts_strongest", "concepts_latent", "concepts_top", "concepts_photo", "concepts_patch",
         "concepts_edit", "concepts_edit_line", "concepts_top5")
OUTPUTS = ("concepts_state", "concepts_sae", *DRAWN)
TOP_OUTPUTS = ("concepts_state", "concepts_latent", "concepts_top")             # a latent picked
EDIT_OUTPUTS = ("concepts_state", "concepts_latent", "concepts_top", "concepts_edit", "concepts_edit_line",
                "concepts_top5")

FACTORS = (0.0, 4.0)                  # the factor a latent may be scaled by (0: switched off)
SAE_MEMORY = 256 * 2**20              # SAEs opened for a model: ViT-Ti's of 768 latents 1.2 MB, ViT-B's of 24,576 150 MB
PHOTO_MEMORY = 32 * 2**20             # a photo's codes at the SAE's layer, its input and the unedited pass' attention
EDIT_MEMORY = 8 * 2**20               # edits: two rollouts and the probabilities each
SOURCES = Cache(None, SAE_MEMORY, weigh=lambda source: source.nbytes)   # ConceptsSource per (SAE folder, model)
PHOTOS = Cache(None, PHOTO_MEMORY, weigh=lambda pc: pc.nbytes)          # PhotoConcepts per (AnalysisKey, SAE folder)
EDITS = Cache(None, EDIT_MEMORY)                    # Edited per (AnalysisKey, SAE folder, latent, factor, masked)
FITS: dict[tuple[str, str], bool] = {}              # (SAE folder, model) -> whether the SAE is made for the model


@dataclass(frozen=True)
class Shown:
    """What the tab shows for one browser tab: of which analysis and SAE, the latent picked, the clicked patch, the
    edit shown ((latent, factor)) and where the strongest-concepts picture's rows lie."""
    key: AnalysisKey
    sae: str                                        # the SAE as the box names it
    folder: str                                     # where it is (what the guard gave)
    latent: int
    patch: tuple[int, int] | None = None
    edited: tuple[int, float] | None = None
    spans: tuple[tuple[int, int, int], ...] = ()


def build(page) -> None:
    i18n = page.i18n
    page.add("concepts_state", gr.State(None))
    gr.Markdown(i18n("about.concepts"))
    with gr.Row():
        with gr.Column(scale=2, min_width=260):
            page.add("concepts_sae", gr.Dropdown([], value=None, allow_custom_value=True,
                                                 label=i18n("control.concepts_sae"), info=i18n("help.concepts_sae"),
                                                 elem_id="concepts-sae"))
        with gr.Column(scale=3, min_width=300):
            page.add("concepts_line", gr.Markdown(elem_id="concepts-line"))
    page.add("concepts_strongest", picture(i18n, "picture.concepts_strongest", enlarge=False,
                                           elem_id="concepts-strongest"))
    with gr.Row():
        with gr.Column(scale=3, min_width=300):
            page.add("concepts_latent", gr.Dropdown([], value=None, allow_custom_value=True,
                                                    label=i18n("control.concepts_latent"),
                                                    info=i18n("help.concepts_latent"), elem_id="concepts-latent"))
            page.add("concepts_top", picture(i18n, "picture.concepts_top", elem_id="concepts-top"))
        with gr.Column(scale=2, min_width=300):
            page.add("concepts_photo", picture(i18n, "picture.concepts_photo", enlarge=False,
                                               elem_id="concepts-photo"))
            page.add("concepts_patch", gr.Markdown(elem_id="concepts-patch"))
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            page.add("concepts_factor", gr.Slider(*FACTORS, value=0.0, step=0.25, label=i18n("control.concepts_factor"),
                                                  info=i18n("help.concepts_factor"), elem_id="concepts-factor"))
            page.add("concepts_edit_button", gr.Button(i18n("button.concepts_edit"), variant="primary",
                                                       elem_id="concepts-edit-button"))
            page.add("concepts_top5", gr.Label(num_top_classes=5, label=i18n("label.concepts_top5"),
                                               elem_id="concepts-top5"))
        with gr.Column(scale=2, min_width=300):
            # at its drawn size at most: a phone's three panels one under the other, never shrunk to the screen's height
            page.add("concepts_edit", picture(i18n, "picture.concepts_edit", enlarge=False, elem_id="concepts-edit"))
            page.add("concepts_edit_line", note("concepts-edit-line"))


# ---- the SAEs on offer, opened for a model ---------------------------------------------------------------------

def _open(folder: str, key: AnalysisKey, lang: str) -> view.ConceptsSource:
    """The SAE in ``folder`` opened for the key's model (cached), or a gr.Error saying why it cannot be."""
    loaded = state.model_of(key).loaded
    try:
        return SOURCES.get((folder, key.model), lambda: view.open_concepts(folder, loaded, lang=lang))
    except (ValueError, OSError) as err:
        raise gr.Error(t("message.sae_failed", lang, error=err), print_exception=False) from None


def _choice(name: str, source: view.ConceptsSource, lang: str) -> str:
    """An SAE in the box: its name, the layer it reads, its size (short enough for a phone: the hook point is in the
    line beside it)."""
    return t("concepts.choice.sae", lang, name=name, layer=source.sae.info.layer, latents=source.sae.latents)


def offered(key: AnalysisKey) -> list[str]:
    """The names of the listed SAEs made for the key's model: each SAE is opened once per model to know (``FITS``),
    afterwards only when it is used."""
    found = []
    for name, folder in state.listed_saes().items():
        if (folder, key.model) not in FITS:
            if len(FITS) > 4096:                   # visitors' models come and go: forget, and open again
                FITS.clear()
            try:
                FITS[folder, key.model] = _open(folder, key, "en") is not None
            except gr.Error:
                FITS[folder, key.model] = False
        if FITS[folder, key.model]:
            found.append(name)
    return found


def _choices(key: AnalysisKey, names: list[str], lang: str, extra: str | None = None) -> list[tuple[str, str]]:
    """The box's choices: each SAE on offer labelled with its layer, hook and size (in ``lang``), and ``extra`` (a
    folder typed on this machine) as it was typed."""
    listed = state.listed_saes()
    choices = [(_choice(name, _open(listed[name], key, lang), lang), name) for name in names]
    return choices + [(extra, extra)] if extra and extra not in names else choices


def _none_note(key: AnalysisKey, lang: str) -> str:
    """What to do when no SAE is made for this model: the commands that train one and start the app with it (and
    install the training's extra when it is missing), with this model's name and a middle layer."""
    loaded = state.model_of(key).loaded
    model = state.display_name(key.model)
    depth, width = len(loaded.model.blocks), loaded.model.cfg.embed_dim
    commands = [] if importlib.util.find_spec("overcomplete") else ["pip install 'vit-attention-explorer[concepts]'"]
    commands += [f"python -m viz.concepts train FOLDER --weights {model} --layer {depth // 2} --latents {4 * width} "
                 f"--k 16 --out DIR", f"python app.py --weights {model} --sae DIR"]
    text = t("note.concepts_none", lang, model=model, commands="\n".join(commands))
    return text + ("\n\n" + t("note.concepts_typed", lang) if state.SETTINGS.any_model else "")


# ---- drawing ---------------------------------------------------------------------------------------------------

def _photo(shown: Shown, source: view.ConceptsSource, lang: str) -> view.PhotoConcepts:
    """The photo's codes at the SAE's layer (cached; the blocks up to it run in the model's turn)."""
    a = state.analysis(shown.key, lang)
    loaded = state.model_of(shown.key).loaded

    def codes() -> view.PhotoConcepts:
        with state.MODEL_TURN:
            return view.photo_concepts(loaded, source, a.image)

    return PHOTOS.get((shown.key, shown.folder), codes)


def _line(source: view.ConceptsSource, lang: str) -> str:
    """The SAE in a sentence, and how well it explains tokens of photos it was not trained on (its metrics.json,
    when it has one), with a warning when it explains them worse than their mean."""
    line = source.describe(lang)
    path = (source.path if source.path.is_dir() else source.path.parent) / "metrics.json"
    try:
        m = json.loads(path.read_text()) if path.is_file() else None
        if m is not None:
            line += "\n\n" + t("concepts.line.metrics", lang, fvu=m["fvu"], l0=m["l0"], pca=m["pca_fvu_at_l0"],
                               pca_k=m["pca_components"], dead=m["dead_fraction"], photos=m["held_out"]["photos"])
            if m["fvu"] >= 1:
                line += " " + t("concepts.line.fvu_worse", lang)
    except (OSError, ValueError, KeyError, TypeError):     # not ours, or not readable: the SAE alone
        pass
    return line


def _latent_choices(source: view.ConceptsSource, pc: view.PhotoConcepts, patch: tuple[int, int] | None,
                    lang: str, latent: int | None = None) -> list[tuple[str, str]]:
    """The latent box's choices: the photo's strongest, then those active at the clicked patch, then ``latent`` (one
    typed) when it is none of them."""
    def named(latent: int) -> str:
        label = source.label(latent)
        return f" {label}" if label else ""

    choices = {c.latent: t("concepts.choice.latent", lang, latent=c.latent, label=named(c.latent), mean=c.mean)
               for c in view.strongest(pc, source)}
    if patch is not None:
        for c in view.latents_at(pc, source, *patch):
            choices.setdefault(c.latent, t("concepts.choice.at_patch", lang, latent=c.latent, label=named(c.latent),
                                           value=c.mean, row=patch[0], col=patch[1]))
    if latent is not None:
        choices.setdefault(latent, f"#{latent}{named(latent)}")
    return [(label, str(number)) for number, label in choices.items()]


def _patch_text(source: view.ConceptsSource, pc: view.PhotoConcepts, patch: tuple[int, int] | None,
                lang: str) -> str:
    """The latents active at the clicked patch as a list (or what to click)."""
    if patch is None:
        return t("concepts.line.pick_patch", lang)
    found = view.latents_at(pc, source, *patch)
    if not found:
        return t("concepts.line.patch_none", lang, row=patch[0], col=patch[1])
    lines = [f"- **#{c.latent}** {c.mean:.3g}" + (f" · {c.label}" if c.label else "") for c in found]
    return t("concepts.line.patch", lang, row=patch[0], col=patch[1]) + "\n\n" + "\n".join(lines)


def _edited(shown: Shown, source: view.ConceptsSource, pc: view.PhotoConcepts, mask_artifacts, lang: str):
    """The shown edit (cached; the blocks after the SAE's layer run in the model's turn), the rollouts without the
    high-norm artifact tokens while the page masks them -> (Edited, whether they were left out)."""
    latent, factor = shown.edited
    a = state.analysis(shown.key, lang)
    drop = artifact_drop(a, bool(mask_artifacts))
    loaded = state.model_of(shown.key).loaded

    def run() -> view.Edited:
        with state.MODEL_TURN:
            return view.edit(loaded, source, pc, {latent: factor}, lang=lang, drop=drop)

    masked = drop is not None and bool(drop.any())
    return EDITS.get((shown.key, shown.folder, latent, factor, masked), run), masked


def _edit_values(shown: Shown, source, pc, narrow, opacity, mask_artifacts, lang: str) -> dict:
    """The edit's picture, line and top-5 (or what to do before there is one)."""
    if shown.edited is None:
        return {"concepts_edit": None, "concepts_edit_line": t("concepts.line.edit_first", lang),
                "concepts_top5": None}
    e, masked = _edited(shown, source, pc, mask_artifacts, lang)
    image, line = view.edit_view(source, pc, e, alpha=float(opacity), lang=lang, narrow=bool(narrow))
    if masked and e.rollout_before is not None:
        line += " " + t("concepts.line.masked", lang)
    return {"concepts_edit": image, "concepts_edit_line": line,
            "concepts_top5": {label: p for label, p in e.top_after} if e.top_after else None}


def _draw(shown: Shown, narrow, opacity, mask_artifacts, lang: str) -> dict:
    """Every picture and line of the tab for what is shown."""
    source = _open(shown.folder, shown.key, lang)
    pc = _photo(shown, source, lang)
    narrow = bool(narrow)
    rows = view.strongest_rows(source, pc, alpha=float(opacity), lang=lang, narrow=narrow)
    shown = replace(shown, spans=rows.spans)
    return {"concepts_state": shown, "concepts_line": _line(source, lang), "concepts_strongest": rows.image,
            "concepts_latent": gr.Dropdown(choices=_latent_choices(source, pc, shown.patch, lang, shown.latent),
                                           value=str(shown.latent)),
            "concepts_top": view.top_patches_view(source, shown.latent, lang=lang, narrow=narrow),
            "concepts_photo": view.photo_view(pc, shown.patch), "concepts_patch": _patch_text(source, pc, shown.patch,
                                                                                               lang),
            **_edit_values(shown, source, pc, narrow, opacity, mask_artifacts, lang)}


def _cleared(line: str, choices: list | None = None) -> dict:
    return {"concepts_state": None, "concepts_sae": gr.Dropdown(choices=choices or [], value=None),
            **{name: None for name in DRAWN}, "concepts_line": line, "concepts_latent": gr.Dropdown(choices=[],
                                                                                                   value=None),
            "concepts_patch": "", "concepts_edit_line": ""}


def _start(session, name: str, folder: str, kept, narrow, opacity, mask_artifacts, lang: str) -> dict:
    """The tab for the session's photo and the SAE ``name`` (in ``folder``): what ``kept`` shows when it is of the
    same photo and SAE (a new language, the tab opened again), else the photo's strongest latent picked."""
    source = _open(folder, session.key, lang)
    if kept is not None and kept.key == session.key and kept.folder == folder:
        shown = kept
    else:
        pc = _photo(Shown(session.key, name, folder, 0), source, lang)
        shown = Shown(session.key, name, folder, view.strongest(pc, source, 1)[0].latent)
    return _draw(shown, narrow, opacity, mask_artifacts, lang)


# ---- the handlers ------------------------------------------------------------------------------------------------

def show(session, concepts_state, concepts_sae, narrow, opacity, mask_artifacts, lang):
    """Opening the tab, or a new photo, model or language while it is open: the SAEs made for the model in the box,
    the one picked kept (else the first), everything drawn; none: what to do instead, with the commands."""
    if (a := state.session_analysis(session, lang)) is None:
        return {}
    lang = language(lang)
    if not a.architecture.one_sequence:
        return _cleared(t("one_sequence.concepts", lang))
    names = offered(session.key)
    concepts_sae = None if concepts_sae is None else str(concepts_sae)
    typed = None                                     # an SAE folder typed on this machine, still shown
    if concepts_sae and concepts_sae not in names and concepts_state is not None and \
            concepts_state.sae == concepts_sae and concepts_state.key.model == session.key.model:
        typed = concepts_sae
    name = concepts_sae if concepts_sae in names else typed or next(iter(names), None)
    if name is None:
        return _cleared(_none_note(session.key, lang))
    values = _start(session, name, state.sae_source(name, lang), concepts_state, narrow, opacity, mask_artifacts,
                    lang)
    return {**values, "concepts_sae": gr.Dropdown(choices=_choices(session.key, names, lang, typed), value=name)}


def pick_sae(concepts_sae, session, concepts_state, narrow, opacity, mask_artifacts, lang):
    """An SAE picked (or, on this machine, a folder typed): through the guard, opened for the model, drawn."""
    if (a := state.session_analysis(session, lang)) is None:
        return {}
    if not a.architecture.one_sequence:
        raise gr.Error(t("one_sequence.concepts", lang), print_exception=False)
    name = str(concepts_sae or "").strip()
    if not name:                                        # the box emptied: nothing to open
        return {}
    folder = state.sae_source(name, lang)
    values = _start(session, name, folder, concepts_state, narrow, opacity, mask_artifacts, lang)
    names = offered(session.key)
    return {**values, "concepts_sae": gr.Dropdown(choices=_choices(session.key, names, lang, name), value=name)}


def _current(concepts_state: Shown | None, session) -> Shown | None:
    """What is shown, when it is of the session's analysis (else nothing to redraw: the tab is drawn when opened)."""
    if session is None or concepts_state is None or concepts_state.key != session.key:
        return None
    return concepts_state


def _latent(value, source: view.ConceptsSource, lang: str) -> int:
    """The latent box's value (a choice, or a number typed) -> a latent of the SAE, or a gr.Error."""
    text = str(value if value is not None else "").strip().lstrip("#").split(" ")[0]
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number == int(number) and 0 <= number < source.sae.latents):
        raise gr.Error(t("message.concepts_latent", lang, last=source.sae.latents - 1), print_exception=False)
    return int(number)


def _top(shown: Shown, source: view.ConceptsSource, pc: view.PhotoConcepts, narrow, lang: str) -> dict:
    return {"concepts_state": shown, "concepts_top": view.top_patches_view(source, shown.latent, lang=lang,
                                                                            narrow=bool(narrow)),
            "concepts_latent": gr.Dropdown(choices=_latent_choices(source, pc, shown.patch, lang, shown.latent),
                                           value=str(shown.latent))}


def pick_latent(concepts_latent, concepts_state, session, narrow, lang):
    """A latent picked in the box (or typed): its 64 strongest patches."""
    if (shown := _current(concepts_state, session)) is None:
        return {}
    lang = language(lang)
    source = _open(shown.folder, shown.key, lang)
    shown = replace(shown, latent=_latent(concepts_latent, source, lang))
    return _top(shown, source, _photo(shown, source, lang), narrow, lang)


def _point(evt: gr.SelectData) -> tuple[float, float] | None:
    """The clicked pixel (x, y), or None when the event data is not two finite numbers (no page sends that)."""
    try:
        x, y = (float(v) for v in evt.index)
    except (TypeError, ValueError):
        return None
    return (x, y) if math.isfinite(x) and math.isfinite(y) else None


def click_concept(evt: gr.SelectData, concepts_state, session, narrow, lang):
    """A click on a row of the strongest concepts: that latent picked, its 64 strongest patches."""
    if (shown := _current(concepts_state, session)) is None or (point := _point(evt)) is None:
        return {}
    latent = view.Rows(None, shown.spans).at(point[1])
    if latent is None:                                  # the title or a gap between rows
        return {}
    lang = language(lang)
    source = _open(shown.folder, shown.key, lang)
    shown = replace(shown, latent=latent)
    return _top(shown, source, _photo(shown, source, lang), narrow, lang)


def click_patch(evt: gr.SelectData, concepts_state, session, lang):
    """A click on the photo: that patch framed, the latents active there listed (and offered in the latent box)."""
    if (shown := _current(concepts_state, session)) is None or (point := _point(evt)) is None:
        return {}
    lang = language(lang)
    source = _open(shown.folder, shown.key, lang)
    pc = _photo(shown, source, lang)
    shown = replace(shown, patch=view.patch_at(pc, *point))
    return {"concepts_state": shown, "concepts_photo": view.photo_view(pc, shown.patch),
            "concepts_patch": _patch_text(source, pc, shown.patch, lang),
            "concepts_latent": gr.Dropdown(choices=_latent_choices(source, pc, shown.patch, lang, shown.latent),
                                           value=str(shown.latent))}


def switch_latent(concepts_latent, concepts_factor, concepts_state, session, narrow, opacity, mask_artifacts, lang):
    """The button: the latent in the box switched off (factor 0) or scaled at the SAE's layer, the model run again
    from there: the new top-5, the rollout before and after, and what the latent wrote into each patch."""
    if session is None or concepts_state is None:
        raise gr.Error(t("message.concepts_first", lang), print_exception=False)
    if (shown := _current(concepts_state, session)) is None:
        return {}
    lang = language(lang)
    source = _open(shown.folder, shown.key, lang)
    latent = _latent(concepts_latent, source, lang)
    factor = float(concepts_factor)
    if not FACTORS[0] <= factor <= FACTORS[1]:
        raise gr.Error(t("message.concepts_factor", lang, low=FACTORS[0], high=FACTORS[1]), print_exception=False)
    shown = replace(shown, latent=latent, edited=(latent, factor))
    pc = _photo(shown, source, lang)
    return {**_top(shown, source, pc, narrow, lang),
            **_edit_values(shown, source, pc, narrow, opacity, mask_artifacts, lang)}


def concepts_redraw(concepts_state, session, narrow, opacity, mask_artifacts, lang):
    """The opacity or the artifact mask changed: the maps drawn again (an edit's rollouts with or without the
    high-norm artifact tokens)."""
    if (shown := _current(concepts_state, session)) is None:
        return {}
    return _draw(shown, narrow, opacity, mask_artifacts, language(lang))


def wire(page) -> None:
    page["concepts_sae"].input(**page.wire(pick_sae, OUTPUTS), **page.model_work)
    page["concepts_latent"].input(**page.wire(pick_latent, TOP_OUTPUTS), **page.render)
    page["concepts_strongest"].select(**page.wire(click_concept, TOP_OUTPUTS), **page.render)
    page["concepts_photo"].select(**page.wire(click_patch, ["concepts_state", "concepts_photo", "concepts_patch",
                                                            "concepts_latent"]), **page.render)
    page["concepts_edit_button"].click(**page.wire(switch_latent, EDIT_OUTPUTS), **page.model_work)
    page["opacity"].input(**page.wire(concepts_redraw, ["concepts_state", *DRAWN]), **page.render)
    page["mask_artifacts"].input(**page.wire(concepts_redraw, ["concepts_state", *DRAWN]), **page.model_work)
