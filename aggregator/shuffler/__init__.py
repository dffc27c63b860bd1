"""The shuffler: devices → shuffler → collector, for a central epsilon (README: Shuffling).

Devices upload to the shuffler exactly as to the collector. It keeps their reports in a
durable SQLite spool (:mod:`.spool`) and forwards each task's reports per time bucket in
batches drawn from at least ``batch_min`` distinct uploads, in a CSPRNG order, stripped of
every header, address, arrival time and upload boundary, under its own token
(:mod:`.forwarder`). The collector records each batch's size; estimates then state the
central epsilon the shuffle buys (aggregator.core.central, shared.shuffling_accountant).

It lives in the aggregator package because it ships with the server (same extra, same
``ldp-aggregator`` command, same body parsing and problem answers) and is run by the same
operator; it shares no state with the collector and imports none of its store.
"""
