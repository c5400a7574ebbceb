"""``python -m viz`` over many images: which images and labels (``files``), decoding in worker processes and each
process's share (``loader``), statistics streamed exactly (``statistics``), progress for ``--resume`` (``state``),
several processes under torchrun (``distributed``), the summary files (``report``), and the loop (``run``)."""
