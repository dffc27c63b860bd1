"""The heavy-hitter family (kind ``hh``): prefix extension over a count-mean sketch."""
