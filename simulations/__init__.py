"""Simulations that reproduce the theory of the mechanisms in shared/, with plots and tables.

Run ``python -m simulations --help`` from the checkout for the experiments. Each one
computes its numbers apart from plotting, draws the empirical result beside the theory
line, and writes PNG, CSV and markdown files to a git-ignored folder (``out/simulations``).
"""
