"""ViT Attention Explorer: drop a photo, see the top-5 classes and what the Vision Transformer looked at.

    python app.py [--weights PATH | --model NAME] [--host 127.0.0.1] [--port 7860] [--share] [--device auto]

    --weights PATH   a checkpoint file or Hugging Face folder to start with
    --model NAME     a known model name or a file in weights/ (default: torchvision's ViT-B/16)
    --host HOST      the address to serve on (default 127.0.0.1, or $GRADIO_SERVER_NAME; 0.0.0.0 serves the
                     network, and then only the models in the Model list load)
    --port PORT      the port (default 7860, or $GRADIO_SERVER_PORT)
    --share          also serve through a temporary public gradio.live link
    --public         serve as a public server whatever the host (behind a reverse proxy): only the models in the
                     Model list load, and nothing a visitor types is opened
    --device DEVICE  where the models run: auto (CUDA when available, else the CPU), cpu, cuda, cuda:N, mps

This file only starts the app (it is what a Hugging Face Space runs). Everything else lives in packages:

- ``vit_explorer``: the page (the only package that imports Gradio): ``server`` (this command, launch),
  ``layout`` and ``tabs`` (one module per tab, one table of tabs), ``events``, ``views``, ``controls``, ``api``
  (``/analyze`` and ``/explain``), ``state`` (caches and the model's turn), ``components``, ``texts``, ``assets``;
- ``viz``: the maps, panels and pictures from a model's arrays, the analysis that runs the model, the CLI;
- ``vit``: the model, checkpoints, the explanations' model side, training.

The same command as a module: ``python -m vit_explorer``; from Python: ``vit_explorer.server.main(argv)``.
"""
from vit_explorer.server import main

if __name__ == "__main__":
    main()
