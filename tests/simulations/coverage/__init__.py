"""Tests of simulations/coverage."""
