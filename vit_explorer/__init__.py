"""The ViT Attention Explorer's page: a Gradio app on top of the library (``vit`` runs the model, ``viz`` makes
the maps and pictures). The only package that imports Gradio; ``app.py`` only starts it.

- ``server``: the command line (``main``), the memory tuning, the start-up messages, Gradio's launch;
- ``layout``: ``build_app``: the page's layout, one gr.Tab per entry of ``tabs.TABS``;
- ``tabs``: THE table of tabs, and one module per tab (its layout builder and its handlers side by side);
- ``events``: every event, declared once; ``Page``: the components by name and how a handler is wired;
- ``views``: everything the page shows for an analysis: a new photo, model or language, a control change;
- ``controls``: the display and map controls as one named value (``ControlValues``);
- ``api``: the ``/analyze`` and ``/explain`` handlers for API clients;
- ``state``: settings, limits, the caches (``viz.cache.Cache``, bounded in bytes) and the model's turn;
- ``components``: the two gr.Image kinds (``PhotoInput``, ``Picture``); ``texts``: the page's texts;
  ``assets``: its CSS and JavaScript, as files.
"""
