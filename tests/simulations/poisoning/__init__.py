"""Tests of simulations/poisoning."""
