-- The PostgreSQL schema: the SQLite store's tables, in PostgreSQL's types.
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY, config TEXT NOT NULL, upload_key_hash TEXT,
    created_at BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS sums (
    task_id TEXT NOT NULL, bucket BIGINT NOT NULL, row INTEGER NOT NULL,
    n BIGINT NOT NULL, counters BYTEA NOT NULL,
    PRIMARY KEY (task_id, bucket, row));
CREATE TABLE IF NOT EXISTS seen (
    task_id TEXT NOT NULL, report_id BYTEA NOT NULL, expires BIGINT NOT NULL,
    PRIMARY KEY (task_id, report_id));
CREATE INDEX IF NOT EXISTS seen_by_expiry ON seen (expires);
CREATE TABLE IF NOT EXISTS tokens (
    token_hash TEXT PRIMARY KEY, role TEXT NOT NULL, created_at BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS staged (
    id BIGSERIAL PRIMARY KEY, task_id TEXT NOT NULL, bucket BIGINT NOT NULL,
    data BYTEA NOT NULL);
CREATE INDEX IF NOT EXISTS staged_by_task ON staged (task_id);
CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, at BIGINT NOT NULL)
