"""The throwaway PostgreSQL server of ``make demo-cluster`` and the benchmarks.

One copy serves the demo, the benchmarks and the test suite: it lives with the tests
(tests/support/postgres.py), whose developer dependency (pgserver) it needs, and is named
here so ``demo.cluster`` and ``benchmarks`` keep one import.
"""

from tests.support.postgres import PostgresServer

__all__ = ["PostgresServer"]
