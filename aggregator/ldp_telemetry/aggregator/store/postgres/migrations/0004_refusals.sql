-- Reports refused as implausible (fake-device evidence), counted per task, bucket and reason.
CREATE TABLE IF NOT EXISTS refusals (
    task_id TEXT NOT NULL, bucket BIGINT NOT NULL, reason TEXT NOT NULL,
    count BIGINT NOT NULL, PRIMARY KEY (task_id, bucket, reason))
