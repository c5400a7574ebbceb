"""``python -m viz`` over many images, one loop for every architecture (the folder read through ``viz.folders``): a
batch through the model as its description says (``batch``), statistics streamed exactly (``statistics``), progress
for ``--resume`` (``state``), the summary files (``report``), and the loop (``run``)."""
