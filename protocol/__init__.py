"""Protocol 1.0's published conformance vectors (PROTOCOL.md, ``protocol/vectors.json``).

``python -m protocol.generate`` writes them from this implementation; the tests check the
committed file bit for bit against a fresh generation.
"""
