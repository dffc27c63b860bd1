"""The ldp-telemetry aggregator: a Flask collector of privatized reports.

It stores exact integer sums of the reports per task, time bucket and sketch row, and
answers debiased frequency estimates with confidence intervals. Build the app with
:func:`create_app`; run it with ``ldp-aggregator serve`` (granian) or ``aggregator.wsgi``.
"""

from aggregator.factory import create_app

__all__ = ["create_app"]
