-- SQLite's migration 0007 gives its report ids a rowid table (see
-- aggregator/store/sqlite_migrations/0007_seen_by_rowid.sql). PostgreSQL already has that
-- layout: rows are appended to the heap, seen_by_expiry's entries (expires, heap position)
-- follow them, and the primary key is the one random index page per id. Nothing changes
-- here: the step exists because both backends ship the same numbered steps.
SELECT 1
