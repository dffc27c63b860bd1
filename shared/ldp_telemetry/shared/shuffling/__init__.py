"""The central epsilon a shuffle buys: the amplification bound and its exact accountant."""
