"""Tests of simulations/privacy."""
