"""Ours beside pure-ldp on the same values, reports and parameters: our side measured here,
pure-ldp's in its own virtualenv (the ``*_runner.py`` files run there, by path)."""
