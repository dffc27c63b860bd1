"""The shuffler: devices → shuffler → collector, for a central epsilon (README: Shuffling).

Devices upload to the shuffler exactly as to the collector. It keeps their reports in a durable
SQLite spool (:mod:`.spool`) and forwards each task's reports per time bucket in batches drawn from
at least ``batch_min`` distinct uploads, in a CSPRNG order, stripped of every header, address,
arrival time and upload boundary, under its own token (:mod:`.forwarder`). The collector records
each batch's size; estimates then state the central epsilon the shuffle buys
(ldp_telemetry.aggregator.core.central, ldp_telemetry.shared.shuffling.accountant).

It is its own service package beside the collector (another trust role: it sees upload
metadata the collector must not) and ships in the collector's distribution because it
uses the same service kit (body parsing, problem answers, upload keys) and the same
``ldp-aggregator shuffler`` command; it shares no state with the collector.
"""
