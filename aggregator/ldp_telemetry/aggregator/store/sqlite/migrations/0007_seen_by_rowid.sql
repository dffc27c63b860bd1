-- Report ids in a rowid table (issue 26). An id's insert used to dirty two random B-tree
-- pages: the WITHOUT ROWID (task_id, report_id) table and seen_by_expiry, whose entries
-- (expires, task_id, report_id) are ordered by the random id within an expiry. Now rows
-- are appended in rowid order, the unique index on (task_id, report_id) is the one random
-- page, and seen_by_expiry's entries (expires, rowid) are appended at the end of their
-- expiry. Lookups, uniqueness and collection by expiry are those of before.
CREATE TABLE seen_rows (
    task_id TEXT NOT NULL, report_id BLOB NOT NULL, expires INTEGER NOT NULL);
INSERT INTO seen_rows (task_id, report_id, expires)
    SELECT task_id, report_id, expires FROM seen ORDER BY expires;
DROP TABLE seen;
ALTER TABLE seen_rows RENAME TO seen;
CREATE UNIQUE INDEX seen_by_id ON seen (task_id, report_id);
CREATE INDEX seen_by_expiry ON seen (expires)
