"""The ldp-telemetry collector of privatized reports.

It stores exact integer sums of the reports per task, time bucket and sketch row, and
answers debiased frequency estimates with confidence intervals. Build the app with
:func:`create_app` (the composition root, :mod:`ldp_telemetry.aggregator.compose`); run it
with ``ldp-aggregator serve`` (granian) or ``ldp_telemetry.aggregator.serving.wsgi``.
Packages: ``core`` (no web framework), ``store``, ``api`` (Flask), ``dashboard`` (Flask),
``serving``, ``archive``, ``cli``; the shuffler is its own package beside it,
``ldp_telemetry.shuffler`` (docs/architecture.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ldp_telemetry.aggregator.compose import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    # PEP 562: `from ldp_telemetry.aggregator import create_app` loads Flask only when asked,
    # so that `import ldp_telemetry.aggregator.core` (or store, archive) stays framework-free.
    if name == "create_app":
        from ldp_telemetry.aggregator.compose import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
