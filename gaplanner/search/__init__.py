"""The searches: the decoder and its kernels, starting plans, baselines, the GA, the exact search."""
