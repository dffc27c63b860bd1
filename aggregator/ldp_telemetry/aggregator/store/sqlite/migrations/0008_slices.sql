-- Public dimensions (issue 38, PROTOCOL.md §1.1): sums, their roll-up, and staged and
-- archived reports keep the slice a report named (0 for a task without dimensions, so
-- every row stored before is slice 0 and every total is unchanged). A slice's rows exist
-- only once it has reports: storage grows with the slices used, not the declared product.
-- The slice comes before the row in both keys, so one slice's rows are one range scan.
-- A shuffled batch keeps each slice's count, JSON {"index": n} (the n of its central ε).
CREATE TABLE sums_sliced (
    task_id TEXT NOT NULL, bucket INTEGER NOT NULL, slice INTEGER NOT NULL,
    row INTEGER NOT NULL, n INTEGER NOT NULL, counters BLOB NOT NULL,
    PRIMARY KEY (task_id, bucket, slice, row)) WITHOUT ROWID;
INSERT INTO sums_sliced (task_id, bucket, slice, row, n, counters)
    SELECT task_id, bucket, 0, row, n, counters FROM sums;
DROP TABLE sums;
ALTER TABLE sums_sliced RENAME TO sums;
CREATE TABLE rollup_sliced (
    task_id TEXT NOT NULL, slice INTEGER NOT NULL, row INTEGER NOT NULL,
    n INTEGER NOT NULL, counters BLOB NOT NULL,
    PRIMARY KEY (task_id, slice, row)) WITHOUT ROWID;
INSERT INTO rollup_sliced (task_id, slice, row, n, counters)
    SELECT task_id, 0, row, n, counters FROM rollup;
DROP TABLE rollup;
ALTER TABLE rollup_sliced RENAME TO rollup;
ALTER TABLE staged ADD COLUMN slice INTEGER NOT NULL DEFAULT 0;
ALTER TABLE archived ADD COLUMN slice INTEGER NOT NULL DEFAULT 0;
ALTER TABLE shuffled_batches ADD COLUMN slice_counts TEXT NOT NULL DEFAULT '{}'
