"""``python -m viz`` over many images, one loop for every architecture: which images and labels (``files``), decoding
in worker processes and each process's share (``loader``), a batch through the model as its description says
(``batch``), statistics streamed exactly (``statistics``), progress for ``--resume`` (``state``), several processes
under torchrun (``distributed``), the summary files (``report``), and the loop (``run``)."""
