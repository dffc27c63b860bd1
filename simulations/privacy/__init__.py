"""What an attacker learns: the posterior after one answer, after many (longitudinal), from a
collector that re-publishes a task, and what shuffling buys."""
