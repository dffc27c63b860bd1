"""The ldp-telemetry client SDK: privatize values on the device, upload them safely.

::

    from ldp_telemetry import client

    client.init("https://telemetry.example.com", data_dir="~/.cache/myapp/ldp",
                task_ids=["uses-dark-mode", "favourite-font"])  # fetched in the background
    client.record("uses-dark-mode", True)      # a yes/no task: a bool
    client.record("favourite-font", "Inter")   # a sketch task: a str
    client.close()

Or explicitly: ``c = client.Client(endpoint, ...)``; ``c.record(task_id, value)``; ``c.stats()``;
``c.close()``. Values are privatized inside ``record`` with the task's mechanism (see
:mod:`shared`) before anything is queued; see :mod:`ldp_telemetry.client.budget` for the on-device
limits and the cumulative epsilon they give, :mod:`ldp_telemetry.client.privacy_ledger` for the
privacy ledger a collector cannot reset (re-published tasks, device-wide caps),
:mod:`ldp_telemetry.client.settings` for options and ``LDP_*`` variables,
:mod:`ldp_telemetry.client.errors` for the exception tree. ``import client`` does not import Flask
or the aggregator.
"""

from ldp_telemetry.client.client import Client
from ldp_telemetry.client.default import close, flush, get_client, init, record, wait_for_tasks
from ldp_telemetry.client.errors import (
    ClientError,
    ConfigurationError,
    TaskUnavailableError,
    TransportError,
)
from ldp_telemetry.client.settings import RetryPolicy, Timeouts
from ldp_telemetry.client.stats import ClientStats
from ldp_telemetry.client.transport import Request, Response, Transport
from ldp_telemetry.client.transport.http import HTTPTransport
from ldp_telemetry.client.transport.inmemory import InMemoryTransport

__all__ = [
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
