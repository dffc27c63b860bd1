"""The ldp-telemetry client SDK: privatize values on the device, upload them safely.

::

    import client

    client.init("https://telemetry.example.com", data_dir="~/.cache/myapp/ldp",
                task_ids=["uses-dark-mode", "favourite-font"])  # fetched in the background
    client.record("uses-dark-mode", True)      # a yes/no task: a bool
    client.record("favourite-font", "Inter")   # a sketch task: a str
    client.close()

Or explicitly: ``c = client.Client(endpoint, ...)``; ``c.record(task_id, value)``;
``c.stats()``; ``c.close()``. Values are privatized inside ``record`` with the task's
mechanism (see :mod:`shared`) before anything is queued; see :mod:`client.budget` for
the on-device limits and the cumulative epsilon they give, :mod:`client.ledger` for the
privacy ledger a collector cannot reset (re-published tasks, device-wide caps),
:mod:`client.settings` for options and ``LDP_*`` variables, :mod:`client.errors` for
the exception tree.
``import client`` does not import Flask or the aggregator.
"""

from client.client import Client
from client.default import close, flush, get_client, init, record, wait_for_tasks
from client.errors import ClientError, ConfigurationError, TaskUnavailableError, TransportError
from client.http_transport import HTTPTransport
from client.inmemory import InMemoryTransport
from client.settings import RetryPolicy, Timeouts
from client.stats import ClientStats
from client.transport import Request, Response, Transport

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
