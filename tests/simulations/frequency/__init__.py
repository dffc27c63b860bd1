"""Tests of simulations/frequency."""
