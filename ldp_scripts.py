"""Console scripts that say which extra they need instead of failing with an ImportError.

``pip install ldp-telemetry`` installs the SDK alone; ``ldp-aggregator`` needs the
``[server]`` extra and ``ldp-sim`` the ``[sim]`` extra.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable

# script: (extra, modules it needs, module whose main() runs it)
SCRIPTS = {
    "ldp-aggregator": (
        "server",
        ("flask", "click", "gunicorn", "prometheus_client"),
        "aggregator.cli",
    ),
    "ldp-sim": ("sim", ("matplotlib", "tqdm"), "simulations.__main__"),
}


def missing_modules(modules: tuple[str, ...]) -> list[str]:
    """Return the modules that cannot be imported."""
    return [name for name in modules if importlib.util.find_spec(name) is None]


def launch(script: str) -> None:
    """Run a script's main(), or exit naming the extra to install."""
    extra, modules, target = SCRIPTS[script]
    missing = missing_modules(modules)
    if missing:
        sys.exit(
            f"{script} needs the [{extra}] extra ({', '.join(missing)} not installed): "
            f"pip install 'ldp-telemetry[{extra}]'"
        )
    main: Callable[[], None] = importlib.import_module(target).main
    main()


def aggregator() -> None:
    """The ldp-aggregator command."""
    launch("ldp-aggregator")


def sim() -> None:
    """The ldp-sim command."""
    launch("ldp-sim")
