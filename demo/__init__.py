"""`make demo`: the whole system end to end on one machine (see ``python -m demo --help``)."""
