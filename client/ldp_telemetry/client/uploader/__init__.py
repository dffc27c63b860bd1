"""Delivery off the caller's thread: the scheduler (when to send) and the exporter (how)."""
