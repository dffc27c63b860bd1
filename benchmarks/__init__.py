"""Benchmarks of the hot paths, side by side with the pure-ldp package (targets: docs/design.md).

Run ``make bench`` (or ``python -m benchmarks [--quick | --smoke]``) from the repository
root. Results are printed as a markdown table and written to ``bench-results/``.
"""
