"""The stores under load: group commits per backend, folds, the SQLite WAL, several nodes on
PostgreSQL, and re-summing the archive with Dask."""
