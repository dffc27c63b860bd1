-- PostgreSQL's migration 0009 stops compressing packed report batches
-- (aggregator/ldp_telemetry/aggregator/store/postgres/migrations/0009_packed_uncompressed.sql).
-- SQLite never compresses: nothing changes here: the step exists because both backends
-- ship the same numbered steps.
SELECT 1
