"""The PostgreSQL backend for several collector nodes: its writer, folder, faults and migrations."""
