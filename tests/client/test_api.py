"""The public surface: exports, import hygiene, settings precedence, construction errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ldp_telemetry import client
from ldp_telemetry.client import ConfigurationError, InMemoryTransport, RetryPolicy, Timeouts
from ldp_telemetry.client.errors import ClientError, TaskUnavailableError, TransportError
from ldp_telemetry.client.settings import MAX_REPORTS_PER_PERIOD, Settings
from ldp_telemetry.shared import LdpError

pytestmark = pytest.mark.timeout(60)


def test_public_names_are_pinned() -> None:
    assert client.__all__ == [
        "Client",
        "ClientError",
        "ClientStats",
        "ConfigurationError",
        "HTTPTransport",
        "InMemoryTransport",
        "Request",
        "Response",
        "RetryPolicy",
        "TaskUnavailableError",
        "Timeouts",
        "Transport",
        "TransportError",
        "close",
        "flush",
        "get_client",
        "init",
        "record",
        "wait_for_tasks",
    ]
    assert all(hasattr(client, name) for name in client.__all__)


def test_one_exception_root() -> None:
    for error in (ConfigurationError, TransportError, TaskUnavailableError):
        assert issubclass(error, ClientError)
    assert issubclass(ClientError, LdpError)
    assert issubclass(ConfigurationError, ValueError)


def test_import_client_does_not_import_flask_or_aggregator() -> None:
    code = (
        "import sys, client; bad = [m for m in ('flask', 'aggregator', 'werkzeug') "
        "if m in sys.modules]; sys.exit(str(bad) if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


def test_arguments_beat_environment_beat_defaults() -> None:
    env = {
        "LDP_ENDPOINT": "https://env.example",
        "LDP_BATCH_SIZE": "7",
        "LDP_FLUSH_INTERVAL": "2.5",
        "LDP_REPORTS_PER_PERIOD": "none",
    }
    settings = Settings.resolve({"batch_size": 3}, env=env)
    assert settings.endpoint == "https://env.example"
    assert settings.batch_size == 3  # argument
    assert settings.flush_interval == 2.5  # environment
    assert settings.reports_per_period is None  # environment: no limit
    assert settings.max_queue == 10_000  # default
    assert Settings.resolve({"endpoint": "http://a"}, env={}).reports_per_period == 1


def test_max_batch_bytes_setting() -> None:
    assert Settings.resolve({"endpoint": "http://a"}, env={}).max_batch_bytes == 1 << 20
    env = {"LDP_ENDPOINT": "http://a", "LDP_MAX_BATCH_BYTES": "65536"}
    assert Settings.resolve({}, env=env).max_batch_bytes == 65536
    for bad in (100, 5 << 20):  # below 1 KiB, above the collector's 4 MiB
        with pytest.raises(ConfigurationError, match="max_batch_bytes"):
            Settings.resolve({"endpoint": "http://a", "max_batch_bytes": bad}, env={})


def test_none_means_no_limit_when_passed_explicitly() -> None:
    settings = Settings.resolve(
        {"endpoint": "http://a", "reports_per_period": None, "atexit_timeout": None},
        env={"LDP_REPORTS_PER_PERIOD": "4"},
    )
    assert settings.reports_per_period is None and settings.atexit_timeout is None


def test_the_report_limit_is_resolved_once_in_settings() -> None:
    assert Settings(endpoint="http://a").report_limit == 1
    assert Settings(endpoint="http://a", reports_per_period=7).report_limit == 7
    no_limit = Settings(endpoint="http://a", reports_per_period=None)
    assert no_limit.report_limit == MAX_REPORTS_PER_PERIOD  # the memo's cap


@pytest.mark.parametrize(("variable", "enabled"), [("1", False), ("true", False), ("0", True)])
def test_kill_switch_variable(variable: str, enabled: bool) -> None:
    env = {"LDP_DISABLED": variable}
    assert Settings.resolve({"endpoint": "http://a"}, env=env).enabled is enabled
    assert Settings.resolve({"endpoint": "http://a", "enabled": True}, env=env).enabled


@pytest.mark.parametrize(
    ("arguments", "env", "message"),
    [
        ({}, {}, "endpoint is required"),
        ({"endpoint": "ftp://x"}, {}, "http:// or https://"),
        ({"endpoint": "http://a", "batch_size": 0}, {}, "batch_size"),
        ({"endpoint": "http://a", "flush_interval": float("nan")}, {}, "flush_interval"),
        ({"endpoint": "http://a", "max_queue": True}, {}, "max_queue"),
        ({"endpoint": "http://a"}, {"LDP_BATCH_SIZE": "ten"}, "LDP_BATCH_SIZE"),
        ({"endpoint": "http://a"}, {"LDP_DISABLED": "maybe"}, "LDP_DISABLED"),
        ({"endpoint": "http://a", "timeouts": 3}, {}, "client.Timeouts"),
    ],
)
def test_bad_settings_raise_at_construction(
    arguments: dict[str, object], env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        Settings.resolve(arguments, env=env)


def test_config_objects_validate() -> None:
    with pytest.raises(ConfigurationError, match=r"timeouts\.read"):
        Timeouts(read=0)
    with pytest.raises(ConfigurationError, match="max_retries"):
        RetryPolicy(max_retries=-1)


def test_client_construction_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="transport"):
        client.Client("http://a", transport=object())
    with pytest.raises(ConfigurationError, match="TaskConfig"):
        client.Client("http://a", tasks=[{"task_id": "x"}])
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(ConfigurationError, match="data_dir"):
        client.Client("http://a", data_dir=tmp_path / "file" / "sub")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "device.key").write_bytes(b"short")
    with pytest.raises(ConfigurationError, match="device secret"):
        client.Client("http://a", data_dir=tmp_path / "d")


def test_module_functions_are_no_ops_before_init(tasks: dict) -> None:
    assert client.get_client() is None
    assert client.record("t-rr", True) is False
    assert client.flush(0.1) is True
    assert client.close(0.1) is True


def test_module_functions_after_init(tasks: dict) -> None:
    transport = InMemoryTransport(tasks.values())
    made = client.init("memory://test", transport=transport, atexit_timeout=None, task_ids=["t-rr"])
    try:
        assert client.wait_for_tasks(timeout=10)
        assert client.get_client() is made
        assert client.record("t-rr", True) is True
        assert client.flush(5) is True
        assert len(transport.reports("t-rr")) == 1
    finally:
        assert client.close(5) is True
    assert client.get_client() is None and client.record("t-rr", True) is False
