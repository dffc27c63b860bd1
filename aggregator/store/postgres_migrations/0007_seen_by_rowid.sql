-- SQLite's migration 0007 gives its report ids a rowid table (see
-- aggregator/store/sqlite_migrations/0007_seen_by_rowid.sql). PostgreSQL's heap table with
-- its primary key already appends rows and keeps one index entry per id, so nothing changes
-- here: the step exists because both backends ship the same numbered steps.
SELECT 1
