"""The SQLite backend: one file per collector node; its faults, its lock and its migrations."""
