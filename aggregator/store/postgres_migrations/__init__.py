"""The PostgreSQL store's schema as numbered migrations: ``NNNN_name.sql`` in this folder.

Applied as the SQLite ones are (:mod:`aggregator.store.migrations`), under a
transaction-scoped advisory lock so that nodes starting together migrate once.
"""
