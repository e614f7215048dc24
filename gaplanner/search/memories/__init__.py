"""The search across several memories: its decoder and its search."""
