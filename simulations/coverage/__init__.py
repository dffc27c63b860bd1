"""Do the collector's intervals mean what they say? Every kind's answers against the truth
(``python -m simulations coverage``; its numeric rows alone: ``python -m
simulations.coverage.numeric_rows``)."""
