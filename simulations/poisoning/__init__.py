"""Fake devices against every frequency kind (``python -m simulations poisoning``): the
crafted and random reports, the gain they buy and the defences."""
