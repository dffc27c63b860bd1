"""What analysts ask of the sums: the query, the estimates and heavy-hitter answers, and the
central epsilon a shuffle buys them."""
