"""The shuffler's WSGI entry point: ``ldp_telemetry.shuffler.wsgi:app`` (configured by
``LDP_SHUFFLER_*``, which ``ldp-aggregator shuffler`` sets), served as the collector is
(ldp_telemetry.aggregator.serving): its requests on ``BRIDGE_THREADS`` threads, off the loop."""

from ldp_telemetry.aggregator.serving import Served
from ldp_telemetry.shuffler.app import app_from_environment

shuffler = app_from_environment()
app = Served(
    shuffler,
    int(shuffler.config["MAX_BODY_BYTES"]),
    threads=int(shuffler.config["BRIDGE_THREADS"]),
)
