"""Tests of simulations/numeric."""
