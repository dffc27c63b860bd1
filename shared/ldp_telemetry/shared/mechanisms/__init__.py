"""The local-DP mechanisms, one module each, and the registry that names them.

See :mod:`ldp_telemetry.shared.mechanisms.base` for what every mechanism provides and
:mod:`ldp_telemetry.shared.mechanisms.registry` for the lookup from a name.
"""
