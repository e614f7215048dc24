"""The patent's experiments (seed 003, Figures 10a and 10b) as notebooks.

Run them with ``python -m experiments.notebooks.run``.
"""
