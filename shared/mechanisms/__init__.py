"""The local-DP mechanisms, one module each, and the registry that names them.

See :mod:`shared.mechanisms.base` for what every mechanism provides and
:mod:`shared.mechanisms.registry` for the lookup from a name.
"""
