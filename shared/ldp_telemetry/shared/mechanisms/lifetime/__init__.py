"""Longitudinal variants whose lifetime cost value changes cannot grow (LOLOHA)."""
