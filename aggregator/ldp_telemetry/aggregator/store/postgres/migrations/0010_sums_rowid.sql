-- SQLite's migration 0010 moves its sums and roll-up rows out of WITHOUT ROWID tables
-- (aggregator/ldp_telemetry/aggregator/store/sqlite/migrations/0010_sums_rowid.sql), whose
-- cells spilled a sketch row into overflow pages. A PostgreSQL heap row has no such limit
-- (a row of up to ~2 kB stays inline, larger ones go to TOAST, compressed): nothing changes
-- here: the step exists because both backends ship the same numbered steps. Counters are
-- now written as narrow as their values allow (store/counters.py), which keeps a sketch
-- row of a bucket (m = 1,024 as int8 or int16) inline rather than compressed into TOAST.
SELECT 1
