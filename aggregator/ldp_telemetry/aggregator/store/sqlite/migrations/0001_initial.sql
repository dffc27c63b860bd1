-- The schema of the first release (databases made then carry PRAGMA user_version = 1).
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY, config TEXT NOT NULL, upload_key_hash TEXT,
    created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sums (
    task_id TEXT NOT NULL, bucket INTEGER NOT NULL, row INTEGER NOT NULL,
    n INTEGER NOT NULL, counters BLOB NOT NULL,
    PRIMARY KEY (task_id, bucket, row)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS seen (
    task_id TEXT NOT NULL, report_id BLOB NOT NULL, expires INTEGER NOT NULL,
    PRIMARY KEY (task_id, report_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seen_by_expiry ON seen (expires);
CREATE TABLE IF NOT EXISTS tokens (
    token_hash TEXT PRIMARY KEY, role TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS staged (
    id INTEGER PRIMARY KEY, task_id TEXT NOT NULL, bucket INTEGER NOT NULL,
    data BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS staged_by_task ON staged (task_id);
CREATE TABLE IF NOT EXISTS staged_size (
    task_id TEXT PRIMARY KEY, bytes INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, at INTEGER NOT NULL);
