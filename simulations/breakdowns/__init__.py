"""Experiments on breakdowns by public dimensions: per-slice intervals and comparisons."""
