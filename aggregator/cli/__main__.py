"""``python -m aggregator.cli``: the ``ldp-aggregator`` command."""

from aggregator.cli import main

main()
