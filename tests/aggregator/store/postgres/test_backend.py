"""PostgreSQL-only settings of the store (everything shared is tested on both backends)."""

from __future__ import annotations

import pytest

from ldp_telemetry.aggregator.store.postgres.backend import PostgresStore
from tests.support.postgres import PostgresServer


@pytest.mark.parametrize("setting", ["on", "off"])
def test_synchronous_commit_is_set_on_every_connection(
    postgres: PostgresServer, setting: str
) -> None:
    store = PostgresStore(postgres.new_database(), synchronous_commit=setting)
    try:
        store.initialize()
        with store._read() as tx:
            ((shown,),) = tx.execute("SHOW synchronous_commit")
        assert shown == setting
    finally:
        store.close()


def test_an_unknown_synchronous_commit_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="must be one of on, off"):
        PostgresStore("postgresql://nowhere/x", synchronous_commit="sometimes")
