"""Numeric tasks: the accuracy of percentiles and means (``numeric``) and whether their
intervals cover (``numeric_coverage``)."""
