"""The Compare tab: the session's model (A) against another checkpoint (B) on the same photo, the attention (or
the rollout) through depth as an animation, and a training run's snapshots on the photo. Comparing, animating and
opening the snapshots are heavy jobs of one group ("compare", ``vit_explorer.heavy``); model B and the snapshots'
folder pass the models' guard (``state.model_source``); the slider draws from the snapshots opened, never loads."""
from __future__ import annotations

import hashlib

import gradio as gr
import torch

from vit.checkpoints.load import checkpoints_on_this_machine
from vit.image_file import open_image
from vit.preprocess import CHOICES as PREPROCESS_CHOICES
from viz.compare.animate import display_frames, gif_bytes
from viz.compare import compare as comparison_of
from viz.compare import comparison_image
from viz.compare.side import compare_side
from viz.i18n import t

from .. import state
from ..components import cached_file, picture
from viz.controls import display

OUTPUTS = ("comparison", "compare_note", "top5_a", "top5_b", "animation", "animation_file", "snapshot",
           "snapshot_picture")
ANIMATION_SIZE = 448     # the animation's frames: each the page's map at this size, with its colour bar


def build(page) -> None:
    i18n = page.i18n
    gr.Markdown(i18n("about.compare"))
    with gr.Row(equal_height=True):
        page.add("model_b", gr.Dropdown(state.model_choices(), value=None, allow_custom_value=True, scale=4,
                                        label=i18n("control.compare_model"), info=i18n("help.compare_model"),
                                        elem_id="compare-model"))
        page.add("preprocess_b", gr.Radio([(i18n("choice.as_a"), AS_A),
                                           *[(i18n(f"choice.{c}"), c) for c in PREPROCESS_CHOICES]],
                                          value=AS_A, scale=3, min_width=240, label=i18n("control.preprocess_b"),
                                          info=i18n("help.preprocess_b"), elem_id="compare-preprocess"))
        page.add("compare_button", gr.Button(i18n("button.compare"), variant="primary", scale=1, min_width=90,
                                             elem_id="compare-button"))
    page.add("compare_note", gr.Markdown(elem_id="compare-note", elem_classes=["note"]))
    with gr.Row():
        page.add("top5_a", gr.Label(num_top_classes=5, label=i18n("label.top5_a")))
        page.add("top5_b", gr.Label(num_top_classes=5, label=i18n("label.top5_b")))
    page.add("comparison", picture(i18n, "picture.comparison", enlarge=False, elem_id="comparison-image"))
    with gr.Row(equal_height=True):
        page.add("animate_what", gr.Radio([(i18n("choice.attention"), "attention"),
                                           (i18n("choice.rollout"), "rollout")], value="attention",
                                          label=i18n("control.animate_what"), info=i18n("help.animate_what")))
        page.add("animate_button", gr.Button(i18n("button.animate")))
    with gr.Row():
        page.add("animation", gr.Image(label=i18n("label.animation"), type="filepath", interactive=False,
                                       elem_id="animation", elem_classes=["picture"]))
        page.add("animation_file", gr.File(label=i18n("label.animation"), interactive=False))
    with gr.Row(equal_height=True):
        page.add("snapshots", gr.Textbox(label=i18n("control.snapshots"), info=i18n("help.snapshots"), scale=3))
        page.add("load_snapshots", gr.Button(i18n("button.load_snapshots"), scale=1))
    page.add("snapshot", gr.Slider(0, 1, value=0, step=1, label=i18n("control.snapshot"), info=i18n("help.snapshot"),
                                   interactive=False))
    page.add("snapshot_picture", picture(i18n, "picture.snapshot", enlarge=False))


AS_A = "__as_a__"      # B's photo becomes its input as A's does


def second_choices() -> list[str]:
    """What B can be: the models on offer and, when the server may open any path, every checkpoint on this machine
    (weights/ and the shared test weights beside the repository)."""
    found = [str(p) for p in checkpoints_on_this_machine()] if state.SETTINGS.any_model else []
    return list(dict.fromkeys([*state.model_choices(), *found]))


@torch.inference_mode()
def compare(session, model_b, preprocess_b, lang, controls):
    """The session's model (A) against ``model_b`` on the same photo, its input made as ``preprocess_b`` says (as A's
    by default: then B is another checkpoint; with the same checkpoint, another preprocessing); B's analysis takes
    the model turn. Pressed without a B, or with A itself made the same way, the note under the button says what
    to choose (the checkpoints on this machine, or another preprocessing) and nothing runs."""
    if state.session_analysis(session, lang) is None:
        return {}
    preprocess = session.key.preprocess if preprocess_b in (None, AS_A) else preprocess_b
    same_input = preprocess == session.key.preprocess and not session.key.size    # B runs at its own input size
    if not model_b or (state.model_source(model_b, lang) == session.key.model and same_input):
        options = "\n".join(f"- `{choice}`" for choice in second_choices())
        return {"compare_note": t("message.compare_choose", lang, options=options)}
    served_a = state.model_of(session.key)
    served_b = state.served(model_b, lang, preprocess)
    a = state.analysis(session.key, lang)
    c = controls.for_analysis(a)
    try:
        image = open_image(session.key.photo)
        side_a = compare_side(served_a.loaded, image, a)
        with state.MODEL_TURN:
            side_b = compare_side(served_b.loaded, image)
        comparison = comparison_of(image, side_a, side_b, -1, None, c.fusion, c.discard_ratio, 5)
    except (ValueError, OSError) as err:
        raise gr.Error(t("message.compare_failed", lang, error=err), print_exception=False) from None

    def top(rows, own):
        return {f"{r.label} (Δ {r.change:+.1%})" if r.change is not None else r.label: getattr(r, own) or 0.0
                for r in rows}
    return dict(comparison=comparison_image(comparison, lang=lang, narrow=c.narrow), top5_a=top(comparison.top_a, "a"),
                top5_b=top(comparison.top_b, "b"), compare_note="")


def animate(session, animate_what, lang, controls):
    """A GIF of the CLS attention (or the rollout) layer by layer, one frame per layer, to download."""
    state.refuse_without_one_sequence(session, "one_sequence.animate", lang)
    if (a := state.session_analysis(session, lang)) is None:
        return {}
    c = controls.for_analysis(a)
    frames = display_frames(a, animate_what, c.head, c.fusion, c.discard_ratio, c.mask_artifacts,
                            display=display(c, lang, ANIMATION_SIZE))
    name = hashlib.sha256(repr((session.key, animate_what, c, lang)).encode()).hexdigest()[:16]
    path = cached_file(gif_bytes(frames), f"attention-{animate_what}-{name}.gif")   # deleted with Gradio's cache
    return dict(animation_file=path, animation=path)


def open_snapshots(session, snapshots, lang, narrow=False):
    """Open a training run's snapshot folder on the session's photo: the slider scrubs through it."""
    if session is None or not snapshots:
        return {}
    key = _series_key(session, snapshots, lang)
    try:
        view = state.SERIES.get(key)
    except (ValueError, OSError) as err:
        raise gr.Error(t("message.snapshots_failed", lang, error=err), print_exception=False) from None
    last = len(view.series) - 1
    return dict(snapshot=gr.Slider(minimum=0, maximum=max(last, 1), value=last, interactive=last > 0),
                snapshot_picture=view.frame(last, lang, bool(narrow)))


def show_snapshot(session, snapshots, snapshot, lang, narrow=False):
    """The slider moved: that snapshot's frame, from the arrays of the snapshots opened (no model is loaded here)."""
    if session is None or not snapshots:
        return {}
    view = state.SERIES.find(_series_key(session, snapshots, lang))
    if view is None:
        raise gr.Error(t("message.snapshots_first", lang), print_exception=False)
    return dict(snapshot_picture=view.frame(min(max(int(snapshot), 0), len(view.series) - 1), lang, bool(narrow)))


def _series_key(session, folder: str, lang: str) -> tuple[str, str, str]:
    """The snapshot series' cache key: the folder as the models' guard lets it through, the photo, the
    preprocessing."""
    return state.model_source(folder, lang), session.key.photo, session.key.preprocess


def offer_second() -> dict:
    """The tab opened: B's list offers what this server may open now (``second_choices``: a public server only its
    listed models, decided at launch, after the page was built)."""
    return {"model_b": gr.Dropdown(choices=second_choices())}


def wire(page) -> None:
    page["tab_compare"].select(**page.wire(offer_second, ["model_b"]), **page.instant)
    page["compare_button"].click(**page.wire(compare, ["comparison", "top5_a", "top5_b", "compare_note"],
                                             heavy_group="compare"))
    page["animate_button"].click(**page.wire(animate, ["animation", "animation_file"], heavy_group="compare"))
    gr.on([page["load_snapshots"].click, page["snapshots"].submit],
          **page.wire(open_snapshots, ["snapshot", "snapshot_picture"], heavy_group="compare"))
    page["snapshot"].input(**page.wire(show_snapshot, ["snapshot_picture"]), **page.render)
