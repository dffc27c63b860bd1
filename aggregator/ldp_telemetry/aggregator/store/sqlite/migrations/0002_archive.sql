-- Tasks may keep the privatized reports they accept (archive = 1), packed as staged.
ALTER TABLE tasks ADD COLUMN archive INTEGER NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS archived (
    id INTEGER PRIMARY KEY, task_id TEXT NOT NULL, bucket INTEGER NOT NULL,
    data BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS archived_by_task ON archived (task_id, id)
