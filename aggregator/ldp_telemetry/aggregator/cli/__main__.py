"""``python -m ldp_telemetry.aggregator.cli``: the ``ldp-aggregator`` command."""

from ldp_telemetry.aggregator.cli import main

main()
