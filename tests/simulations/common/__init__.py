"""Tests of simulations/common."""
