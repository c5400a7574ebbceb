"""Every event of the page, declared once, and ``Page``: the components by name and the one way a handler is wired.

A handler's parameters are the names of the components it reads (``controls``: every display and map control,
as one ``ControlValues``), so an event's inputs come from the handler itself and nothing repeats an order. A page
handler returns {output name: value}; the outputs it leaves out are skipped, and a ``gr.Error`` becomes one
``gr.Warning`` and no change at all, so every result, slider and the model picker keep their last valid values
(no "Error" pill). The API's handlers (``vit_explorer.api``) are wired as they are: their errors reach the client.

Queues: model work one event at a time (group "model": analyses, explanations, walks…; inside it, every model
run also takes ``state.MODEL_TURN``), re-renders several at once (group "render": milliseconds of numpy from cached
arrays), each kind of heavy job in its own group with its limits at the door (``vit_explorer.heavy``), tiny updates
without the queue. A stepwise heavy handler is a generator that yields after each step and returns its
{output name: value}; ``wire`` makes it an event that sends nothing until the end, and stops at the next step when
the visitor cancels or leaves.
"""
from __future__ import annotations

import inspect
import typing
from typing import Callable

import gradio as gr

from . import api, heavy, jobs, state, views
from .assets import NARROW_SCREEN_JS, SET_LOCALE_JS
from .controls import CONTROLS
from .controls import NAMES as CONTROL_NAMES
from .controls import ControlValues
from .tabs import SECTIONS, TABS


class Page:
    """The page's components by name (``page.add(name, component)``, ``page[name]``), what the tabs' layouts need
    (``i18n``, the served model's ``depth`` and ``heads``), and ``wire``: a handler made into an event's fn,
    inputs and outputs."""
    model_work = dict(concurrency_id="model", concurrency_limit=1, api_visibility="private")
    render = dict(concurrency_id="render", concurrency_limit=state.RENDER_CONCURRENCY, show_progress="minimal",
                  api_visibility="private", trigger_mode="always_last")
    instant = dict(api_visibility="private", queue=False)

    def __init__(self, i18n: gr.I18n, served):
        self.i18n, self.served = i18n, served
        self.depth, self.heads = served.depth, served.heads
        self.components: dict[str, gr.components.Component | gr.blocks.BlockContext] = {}

    def add(self, name: str, component):
        if name in self.components:
            raise ValueError(f"Two components named {name!r}!")
        self.components[name] = component
        return component

    def __getitem__(self, name: str):
        return self.components[name]

    def wire(self, fn: Callable, outputs, inputs=None, heavy_group: str | None = None) -> dict:
        """``fn`` as an event's dict(fn=, inputs=, outputs=). Its inputs are the components named like its
        parameters (or ``inputs``, names), the parameter ``controls`` standing for every control; Gradio fills in
        its gr.Request, gr.SelectData and gr.Progress parameters itself. ``heavy_group``: a heavy job of that group
        (``vit_explorer.heavy``): its group's settings come with it. Every handler runs within the memory budget
        (``vit_explorer.jobs.admitted``: its job's peak estimated before it runs)."""
        outputs = list(outputs)
        signature, hints = inspect.signature(fn), typing.get_type_hints(fn)
        special = [p for p in signature.parameters.values() if _gradio_fills(p, hints)]
        if inputs is None:
            inputs = [p.name for p in signature.parameters.values()
                      if p not in special and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [n for name in inputs for n in (CONTROL_NAMES if name == "controls" else (name,))]
        parameters = [*(p.replace(kind=p.POSITIONAL_OR_KEYWORD) for p in special if p.default is p.empty),
                      *(inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names),
                      *(p.replace(kind=p.POSITIONAL_OR_KEYWORD) for p in special if p.default is not p.empty)]
        order = [p.name for p in parameters]

        def values_of(args) -> dict:
            values = dict(zip(order, args))
            if "controls" in inputs:
                values["controls"] = ControlValues(**{n: values.pop(n) for n in CONTROL_NAMES})
            return values

        def event_outputs(result: dict):
            unknown = set(result) - set(outputs)
            if unknown:
                raise RuntimeError(f"{fn.__name__} returned {sorted(unknown)}, which are not among its outputs {outputs}")
            out = tuple(result.get(name, gr.skip()) for name in outputs)
            return out[0] if len(out) == 1 else out

        if inspect.isgeneratorfunction(fn):
            def handler(*args):                  # a step at a time: Gradio stops here when the job is cancelled
                values = values_of(args)
                try:
                    with jobs.admitted(fn, values):
                        steps = fn(**values)
                        while True:
                            try:
                                next(steps)
                            except StopIteration as finished:
                                result = finished.value or {}
                                break
                            yield event_outputs({})
                except gr.Error as err:
                    gr.Warning(str(err.message))
                    result = {}
                yield event_outputs(result)
        else:
            def handler(*args):
                values = values_of(args)
                try:
                    with jobs.admitted(fn, values):
                        result = fn(**values)
                except gr.Error as err:
                    gr.Warning(str(err.message))
                    result = {}
                return event_outputs(result)

        handler.__signature__ = inspect.Signature(parameters)
        handler.__annotations__ = {p.name: hints[p.name] for p in special if p.name in hints}
        handler.__name__ = handler.__qualname__ = getattr(fn, "__name__", "handler")
        handler.__doc__ = fn.__doc__
        handler.job = jobs.name_of(fn)          # what it runs: its entry in vit_explorer.jobs
        event = dict(fn=handler, inputs=[self[n] for n in names], outputs=[self[n] for n in outputs])
        if heavy_group is not None:
            event.update(heavy.event(heavy_group))
        return event


def _gradio_fills(parameter: inspect.Parameter, hints: dict) -> bool:
    """Whether Gradio passes this parameter itself: a gr.Request or event data (by annotation), or gr.Progress."""
    hint = hints.get(parameter.name)
    return isinstance(parameter.default, gr.Progress) or hint in (gr.Request, typing.Optional[gr.Request]) or \
        (inspect.isclass(hint) and issubclass(hint, gr.EventData))


def lazy_renderer(page: Page) -> dict:
    """After a new analysis, model, preprocessing or language: the lazy tab that is open (Learn, Explain) is drawn
    again."""
    lazy = {tab.id: tab.lazy for tab in TABS if tab.lazy is not None}
    wanted = {tab.id: list(inspect.signature(tab.lazy).parameters) for tab in TABS if tab.lazy is not None}
    inputs = list(dict.fromkeys(["open_tab", *(n for names in wanted.values() for n in names)]))

    def show_open_tab(open_tab, **values):
        if open_tab not in lazy:
            return {}
        return lazy[open_tab](**{name: values[name] for name in wanted[open_tab]})
    return page.wire(show_open_tab, [o for tab in TABS if tab.lazy is not None for o in tab.outputs], inputs)


def opened_tab(section: str, tab: str, section_tabs: dict | None) -> tuple[str, dict]:
    """A tab opened: it is the open tab, and its section's."""
    return tab, {**(section_tabs or {}), section: tab}


def opened_section(section: str, section_tabs: dict | None) -> str:
    """A section opened: its tab is the open one (its first, before any was chosen in it)."""
    return (section_tabs or {}).get(section) or next(tab.id for tab in TABS if tab.section == section)


def declare(page: Page, demo: gr.Blocks) -> None:
    """Every event of the page: the API, the photo, model, preprocessing and language, the controls, the tabs, then
    each tab's own (``Tab.wire``)."""
    model_work = dict(concurrency_id="model", concurrency_limit=1)
    private = dict(api_visibility="private")

    # the API: /analyze (the page's first 15 outputs, in their historical order) and /explain
    page["api_analyze"].click(jobs.api_job(api.analyze), [page[n] for n in api.ANALYZE_INPUTS],
                              [page[n] for n in api.API_OUTPUTS], api_name="analyze", **model_work)
    page["api_explain"].click(jobs.api_job(api.explain), [page[n] for n in api.EXPLAIN_INPUTS],
                              [page[n] for n in api.EXPLAIN_OUTPUTS], api_name="explain", **model_work)

    # the photo, the model, the preprocessing and the language: every view, then the open lazy tab
    demo.load(views.initial_language, None, [page["lang"], page["language_switch"], page["font_note"]], **private)
    demo.load(None, None, page["narrow"], js=NARROW_SCREEN_JS, **private)    # in the browser only
    lazy = lazy_renderer(page)
    analysed = gr.on([page["photo"].change, page["rerun"].click],
                     **page.wire(views.page_analyze, [*views.ANALYSIS_OUTPUTS, "photo"]), **page.model_work)
    switched = page["model"].input(**page.wire(views.switch_model, [*views.ANALYSIS_OUTPUTS, *views.SWITCHED_MODEL]),
                                   **page.model_work)
    preprocessed = page["preprocess"].input(**page.wire(views.switch_preprocess, views.ANALYSIS_OUTPUTS),
                                            **page.model_work)
    page["input_size"].input(**page.wire(views.size_cost, ["input_cost"]), **page.instant)
    resized = page["input_size"].release(**page.wire(views.switch_size, [*views.ANALYSIS_OUTPUTS, "input_cost"]),
                                         **page.model_work)
    relabelled = page["language_switch"].input(
        **page.wire(views.switch_language, ["lang", "font_note", *views.TAB_LABELS, *views.ANALYSIS_OUTPUTS]),
        js=SET_LOCALE_JS, **page.model_work)
    for event in (analysed, switched, preprocessed, resized, relabelled):
        event.then(**lazy, **page.model_work)

    # a control: only the maps that use it
    for name in CONTROLS:
        page[name].input(**page.wire(views.on_control(name), views.redrawn_by(name)), **page.render)

    # the tabs: the open one is remembered (a lazy one is drawn when opened), and the one open in each section; a
    # section opened shows the tab it showed last, drawn if it is lazy; then each tab's own events
    for tab in TABS:
        selected = page[f"tab_{tab.id}"].select(
            lambda section_tabs, section=tab.section, name=tab.id: opened_tab(section, name, section_tabs),
            page["section_tabs"], [page["open_tab"], page["section_tabs"]], **page.instant)
        if tab.lazy is not None:
            selected.then(**page.wire(tab.lazy, tab.outputs), **page.model_work)
    for section in SECTIONS:
        page[f"section_{section}"].select(lambda section_tabs, section=section: opened_section(section, section_tabs),
                                          page["section_tabs"], page["open_tab"], **page.instant).then(
            **lazy, **page.model_work)
    for tab in TABS:
        if tab.wire is not None:
            tab.wire(page)
