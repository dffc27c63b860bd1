"""What the tests share: servers started for real, fixtures and helpers, defined once."""
