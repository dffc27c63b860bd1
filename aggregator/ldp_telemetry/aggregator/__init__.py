"""The ldp-telemetry collector: it takes privatized reports and answers estimates from their sums.

It stores exact integer sums of the reports per task, time bucket and sketch row, and
answers debiased estimates with confidence intervals. Uploads run the framework-free
intake (``core.intake``): under ``ldp-aggregator serve``'s default server (granian) the
RSGI bridge (``serving.rsgi_bridge``) calls it directly, with no Flask on the way; the
analysts' API, the dashboard, /metrics and admin are a Flask app, built by
:func:`create_app` (the composition root, :mod:`.compose`). Packages: ``core`` (no web
framework), ``store``, ``archive``, ``api`` (Flask), ``serving``, ``dashboard``, ``cli``
(docs/architecture.md); the shuffler is a service of its own, ``ldp_telemetry.shuffler``.
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
