"""Pictures from arrays: colour lookup and overlays (``render``), thumbnail grids (``grids``) and plots on
``matplotlib.figure.Figure`` (``plots``). Numpy and Pillow; matplotlib only through Figure, never pyplot."""
