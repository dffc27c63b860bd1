-- Packed report batches are stored as they are (issue 41). A staged or archived batch of
-- more than ~2 kB (an upload of a dozen reports or more) went through TOAST's pglz
-- compression on insert and decompression on fold, for nothing: bit-packed reports do not
-- compress (WAL per report was the same with and without). Measured with
-- benchmarks/store/writer.py's groups (4 uploads of 100 CMS reports, k = m = 1024):
-- 20-22 -> 8-9 µs of PostgreSQL CPU per report, and at 10 reports per upload (below the
-- threshold) nothing changes. EXTERNAL: still moved out of line when large, not compressed.
ALTER TABLE staged ALTER COLUMN data SET STORAGE EXTERNAL;
ALTER TABLE archived ALTER COLUMN data SET STORAGE EXTERNAL
