-- Batches a shuffler forwarded (issue 28): how many distinct uploads each hid among, so
-- estimates can state the central epsilon. One row per batch id (a retried batch counts once).
CREATE TABLE IF NOT EXISTS shuffled_batches (
    task_id TEXT NOT NULL, batch_id BYTEA NOT NULL, bucket BIGINT NOT NULL,
    size BIGINT NOT NULL, reports BIGINT NOT NULL, PRIMARY KEY (task_id, batch_id));
CREATE INDEX IF NOT EXISTS shuffled_by_bucket ON shuffled_batches (task_id, bucket)
