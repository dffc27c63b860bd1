-- Public dimensions (issue 38, PROTOCOL.md §1.1): sums, their roll-up, and staged and
-- archived reports keep the slice a report named (0 for a task without dimensions, so
-- every row stored before is slice 0 and every total is unchanged). A slice's rows exist
-- only once it has reports: storage grows with the slices used, not the declared product.
-- The slice comes before the row in both keys, so one slice's rows are one range scan.
-- A shuffled batch keeps each slice's count, JSON {"index": n} (the n of its central ε).
-- (The column lands last here, first-but-one in SQLite: every statement names its columns.)
ALTER TABLE sums ADD COLUMN slice INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sums DROP CONSTRAINT sums_pkey;
ALTER TABLE sums ADD PRIMARY KEY (task_id, bucket, slice, row);
ALTER TABLE rollup ADD COLUMN slice INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rollup DROP CONSTRAINT rollup_pkey;
ALTER TABLE rollup ADD PRIMARY KEY (task_id, slice, row);
ALTER TABLE staged ADD COLUMN slice INTEGER NOT NULL DEFAULT 0;
ALTER TABLE archived ADD COLUMN slice INTEGER NOT NULL DEFAULT 0;
ALTER TABLE shuffled_batches ADD COLUMN slice_counts TEXT NOT NULL DEFAULT '{}'
