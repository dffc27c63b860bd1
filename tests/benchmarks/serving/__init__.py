"""Tests of benchmarks/serving."""
