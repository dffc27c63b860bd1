"""Breakdowns by public dimensions: comparing two estimates, and rolling thin groups up."""
