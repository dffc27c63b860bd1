"""The collector's settings, read as the app reads them, with or without an app.

:data:`ldp_telemetry.aggregator.core.config.DEFAULTS`, then ``config.py`` in the instance folder,
then ``LDP_*`` environment variables (parsed as JSON when they parse), then a test mapping. The
command line reads them here to open the store directly, without building the app.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import Config

from ldp_telemetry.aggregator.core.config import DEFAULTS
from ldp_telemetry.aggregator.core.sealing_keys import default_path

APP_NAME = "ldp_telemetry.aggregator"
# The package's folder: Flask cannot find it from the name, ldp_telemetry being a namespace
# package, so the app is given it (and the instance folder below) explicitly.
ROOT_PATH = str(Path(__file__).resolve().parent.parent)


def instance_folder() -> str:
    """Return the app's instance folder (Flask's rule, ``Flask.auto_find_instance_path``).

    Installed: ``<prefix>/var/aggregator-instance``. In a checkout: ``instance/`` at the
    repository's root (aggregator/ldp_telemetry/aggregator is three folders below it).
    """
    installed = Path(sysconfig.get_paths()["purelib"]).resolve()
    if Path(ROOT_PATH).is_relative_to(installed):
        return os.path.join(sys.prefix, "var", "aggregator-instance")
    return str(Path(ROOT_PATH).parents[2] / "instance")


def load(instance_path: str, test_config: Mapping[str, Any] | None = None) -> Config:
    """Return the settings: defaults, instance file, environment, then ``test_config``."""
    config = Config(instance_path, DEFAULTS)
    config.from_pyfile("config.py", silent=True)
    config.from_prefixed_env("LDP")
    if test_config is not None:
        config.from_mapping(test_config)
    # Environment values are parsed as JSON, so a numeric-looking token arrives as an int.
    for key in ("ADMIN_TOKEN", "ANALYST_TOKEN"):
        if config.get(key) is not None:
            config[key] = str(config[key])
    config["MAX_CONTENT_LENGTH"] = int(config["MAX_BODY_BYTES"])
    config["DATABASE"] = config["DATABASE"] or os.path.join(instance_path, "ldp-aggregator.sqlite3")
    # the sealed tasks' key file: beside a SQLite database unless set (core.sealing_keys)
    config["SEAL_KEYS"] = config["SEAL_KEYS"] or default_path(
        str(config["DATABASE"]), instance_path
    )
    return config
