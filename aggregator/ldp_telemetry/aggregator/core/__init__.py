"""The collector's core: what an upload and a query do, with no web framework.

Intake (an upload's checks, commit and answer), admission, quotas, token checks, query
parsing, body decoding and problems as data. The Flask views (ldp_telemetry.aggregator.api) and the
RSGI fast path (ldp_telemetry.aggregator.serving) are thin doors onto it; it never imports them.
"""
