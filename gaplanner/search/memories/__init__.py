"""The search across several memories: its decoder, its fitness, its island for the GA's loop, its
baselines."""
