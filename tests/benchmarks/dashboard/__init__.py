"""Tests of benchmarks/dashboard."""
