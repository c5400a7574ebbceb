"""The page's layout: the title and language switch, the photo with the example photos under it, the top-5 and a
summary, the sections of ``vit_explorer.tabs.SECTIONS`` with one gr.Tab per entry of ``vit_explorer.tabs.TABS`` in
each, the display options that apply to every map, the model
picker, how a photo becomes its input (own, crop, squash) and at what size, what the model saw, and the API's hidden
components; then every event (``vit_explorer.events.declare``). The Blocks are ``door.Explorer``, whose every event
passes the door's checks."""
from __future__ import annotations

import gradio as gr

from vit.preprocess import CHOICES as PREPROCESS_CHOICES
from viz.explain.methods import DEFAULT_METHOD
from viz.i18n import t

from . import events, state, views
from .components import Picture, PhotoInput, note, picture
from .door import Explorer
from .site import examples_by_name
from .tabs import SECTIONS, TABS
from .texts import I18N


def first_tabs() -> dict[str, str]:
    """Each section's first tab: what it shows when it is opened for the first time."""
    return {section: next(tab.id for tab in TABS if tab.section == section) for section in SECTIONS}


def build_app(default_model: str) -> gr.Blocks:
    """The Blocks app; ``default_model`` (a source for vit.load) is loaded now to size the sliders (ValueError or
    OSError when it cannot be: ``vit_explorer.server`` says why and how to start instead)."""
    default_model = str(default_model).strip()
    served = state.MODELS.get(default_model)
    state.SETTINGS.models[:] = [default_model]
    shown_as = state.display_name(default_model)      # the page names it, never says where it lies
    i18n = I18N
    page = events.Page(i18n, served)
    with Explorer(title=t("page.title", "en"), delete_cache=(600, 3600), analytics_enabled=False) as demo:
        page.add("session", gr.State(None))
        page.add("current_model", gr.State(shown_as))
        page.add("lang", gr.State("en"))
        page.add("open_tab", gr.State(TABS[0].id))
        page.add("section_tabs", gr.State(first_tabs()))     # the tab each section shows when it is opened
        with gr.Row(equal_height=True):
            gr.Markdown(i18n("page.title"), elem_id="title")
            page.add("language_switch", gr.Radio([("English", "en"), ("中文", "zh-CN")], value="en", show_label=False,
                                                 container=False, elem_id="language", scale=0, min_width=180))
        gr.Markdown(i18n("page.intro"))
        page.add("font_note", note("font-note"))
        with gr.Row():
            with gr.Column(scale=2, min_width=300):
                page.add("photo", PhotoInput(label=i18n("label.photo"), type="filepath", image_mode=None,
                                             elem_id="photo-input", sources=["upload", "webcam", "clipboard"],
                                             height=260))
                photos = state.example_photos()     # right under the photo: on the first screen of a phone too
                if photos:
                    examples_by_name(gr.Examples(photos, inputs=page["photo"], cache_examples=False,
                                                 api_visibility="private", label=i18n("label.examples"),
                                                 examples_per_page=8, elem_id="examples"), photos)
            with gr.Column(scale=3, min_width=300):
                page.add("top5", gr.Label(num_top_classes=5, label=i18n("label.top5"), elem_id="top5"))
                page.add("summary", gr.Markdown(elem_id="summary"))
        with gr.Tabs(overflow_behavior="wrap", elem_id="sections"):     # a few sections a student can scan
            for section in SECTIONS:
                with gr.Tab(i18n(f"section.{section}"), id=f"section-{section}") as part:
                    with gr.Tabs(overflow_behavior="wrap", elem_id=f"tabs-{section}", elem_classes=["tabs"]):
                        for tab in (tab for tab in TABS if tab.section == section):
                            with gr.Tab(i18n(f"tab.{tab.id}"), id=tab.id) as component:
                                tab.build(page)
                            page.add(f"tab_{tab.id}", component)
                page.add(f"section_{section}", part)
        with gr.Accordion(i18n("label.display"), open=True):   # applies to every map of every tab
            with gr.Row():   # one column each, so that on a phone they stack instead of squeezing
                with gr.Column(min_width=220):
                    page.add("opacity", gr.Slider(0.0, 1.0, value=0.6, step=0.05, label=i18n("control.opacity"),
                                                  info=i18n("help.opacity")))
                with gr.Column(min_width=220):
                    page.add("mask_artifacts", gr.Checkbox(True, label=i18n("control.mask_artifacts"),
                                                           info=i18n("help.mask_artifacts"), elem_id="mask-artifacts"))
                with gr.Column(min_width=220):
                    page.add("shared_scale", gr.Checkbox(False, label=i18n("control.shared_scale"),
                                                         info=i18n("help.shared_scale")))
                with gr.Column(min_width=220):
                    page.add("patch_true", gr.Checkbox(False, label=i18n("control.patch_true"),
                                                       info=i18n("help.patch_true")))
        with gr.Row():
            with gr.Column(scale=3, min_width=300):
                with gr.Row(equal_height=True):
                    page.add("model", gr.Dropdown(state.model_choices(), value=shown_as, allow_custom_value=True,
                                                  scale=3, label=i18n("label.model"), elem_id="model-picker",
                                                  info=i18n("help.model")))
                    page.add("preprocess", gr.Radio([(i18n(f"choice.{c}"), c) for c in PREPROCESS_CHOICES],
                                                    value=PREPROCESS_CHOICES[0], scale=3, min_width=240,
                                                    label=i18n("control.preprocess"), info=i18n("help.preprocess"),
                                                    elem_id="preprocess"))
                    page.add("rerun", gr.Button(i18n("button.analyze"), variant="primary", scale=1, min_width=90))
                with gr.Row(equal_height=True):
                    with gr.Column(scale=3, min_width=260):
                        page.add("input_size", gr.Slider(label=i18n("control.input_size"), info=i18n("help.input_size"),
                                                         elem_id="input-size", **views.size_range(served)))
                    with gr.Column(scale=2, min_width=260):
                        page.add("input_cost", note("input-cost"))
            with gr.Column(scale=2, min_width=300):
                page.add("crop", picture(i18n, "picture.crop", height=240, elem_id="crop-image"))
                page.add("crop_note", note("crop-note"))
        with gr.Column(visible=False):   # the API's own endpoints: /analyze and /explain (raise plain gr.Error)
            # the browser's width, set once at load (events.declare): pictures for a phone-sized screen
            page.add("narrow", gr.Checkbox(False, elem_id="narrow"))
            page.add("api_analyze", gr.Button("analyze"))
            page.add("api_explain", gr.Button("explain"))
            page.add("api_method", gr.Textbox(DEFAULT_METHOD))
            page.add("api_target", gr.Textbox(""))
            page.add("api_contrast", gr.Textbox(""))
            page.add("api_model", gr.Textbox(""))
            page.add("api_picture", Picture(format="png"))
            page.add("api_numbers", gr.JSON())
        events.declare(page, demo)
        demo.lang_state = page["lang"]               # refusals at the door are said in the page's language
    return demo

