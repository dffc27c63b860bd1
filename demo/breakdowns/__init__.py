"""Breakdowns end to end: real SDK devices with public dimensions against a real collector."""
