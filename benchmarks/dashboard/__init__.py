"""The dashboard's pages and heavy-hitter discovery with many tasks and reports."""
