"""The shuffler: devices → shuffler → collector, for a central epsilon (docs/shuffling.md).

Devices upload to the shuffler exactly as to the collector. It keeps their reports in a durable
SQLite spool (:mod:`.spool`) and forwards each task's reports per time bucket in batches drawn from
at least ``batch_min`` distinct uploads, in a CSPRNG order, stripped of every header, address,
arrival time and upload boundary, under its own token (:mod:`.forwarder`). The collector records
each batch's size; estimates then state the central epsilon the shuffle buys
(ldp_telemetry.aggregator.core.analysis.central, ldp_telemetry.shared.shuffling.accountant).

It is its own service package beside the collector (another trust role: it sees upload
metadata the collector must not) and ships in the collector's distribution because it
uses the collector's framework-free core (body decoding, problem answers, token and upload-key
checks, SQLite faults: ldp_telemetry.aggregator.core) and the shared wire format, and is
served as the collector is (``ldp-aggregator shuffler``, ldp_telemetry.aggregator.serving, named
by its WSGI entry alone). It imports nothing else of the collector (not its store, API or
dashboard: docs/architecture.md) and shares no state with it.
"""
