"""The reuse-ordering experiments (Figures 10a and 10b: planners by environment, convergence) as notebooks.

Run them with ``python -m experiments.notebooks.run``.
"""
