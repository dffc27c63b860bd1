-- Every bucket's sums of a task added up, one row per sketch row (issue 26): a read over
-- all of a task's buckets (heavy-hitter discovery, whole-range estimates) reads these
-- instead of one row per bucket. Folds keep them, and rollup_ready lists the tasks whose
-- roll-up holds every fold (tasks without sums now, the others once a first read builds it).
CREATE TABLE IF NOT EXISTS rollup (
    task_id TEXT NOT NULL, row INTEGER NOT NULL, n INTEGER NOT NULL, counters BLOB NOT NULL,
    PRIMARY KEY (task_id, row)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rollup_ready (task_id TEXT PRIMARY KEY) WITHOUT ROWID;
INSERT INTO rollup_ready (task_id)
    SELECT task_id FROM tasks
    WHERE NOT EXISTS (SELECT 1 FROM sums WHERE sums.task_id = tasks.task_id)
    ON CONFLICT (task_id) DO NOTHING
