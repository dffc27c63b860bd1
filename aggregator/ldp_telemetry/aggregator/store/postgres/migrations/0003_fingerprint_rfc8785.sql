-- Protocol 1.0 fingerprints tasks by RFC 8785 (PROTOCOL.md §1). A task kept before (no
-- "protocol" in its configuration) loses its stored fingerprint, computed from Python's
-- float repr, and the loader computes the new one from the unchanged parameters.
UPDATE tasks SET config = (config::jsonb - 'fingerprint')::text
    WHERE (config::jsonb -> 'protocol') IS NULL
