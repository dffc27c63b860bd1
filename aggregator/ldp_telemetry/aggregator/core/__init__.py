"""The collector's core: what an upload and a query do, with no web framework.

Intake (an upload's checks, commit and answer), admission, quotas, token checks, query
parsing, body decoding, problems as data, the settings and the storage faults. The Flask views
(ldp_telemetry.aggregator.api, .dashboard), the RSGI fast path (ldp_telemetry.aggregator.serving),
the command line and the shuffler are thin doors onto it; it never imports them.
"""
