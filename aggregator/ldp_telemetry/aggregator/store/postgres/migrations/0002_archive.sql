-- Tasks may keep the privatized reports they accept (archive = 1), packed as staged.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS archive INTEGER NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS archived (
    id BIGSERIAL PRIMARY KEY, task_id TEXT NOT NULL, bucket BIGINT NOT NULL,
    data BYTEA NOT NULL);
CREATE INDEX IF NOT EXISTS archived_by_task ON archived (task_id, id)
