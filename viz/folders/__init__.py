"""A folder of photos as every run over one reads it (the data set's statistics, the concepts' token cache): which
photos and labels (``files``), decoding in worker processes and each process's share (``loader``), several processes
under torchrun (``distributed``), and what identifies a run for resuming it (``identity``)."""
