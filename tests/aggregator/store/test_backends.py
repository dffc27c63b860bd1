"""The database URL picks the store backend; bad URLs fail with a clear message."""

from __future__ import annotations

from pathlib import Path

import pytest

from ldp_telemetry.aggregator import create_app
from ldp_telemetry.aggregator.api.resources import get_store
from ldp_telemetry.aggregator.store import StoredTask
from ldp_telemetry.aggregator.store.backends import open_store, split_url
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.shared import TaskConfig


@pytest.mark.parametrize(
    ("database", "expected"),
    [
        ("data/x.sqlite3", ("sqlite", "data/x.sqlite3")),
        ("/abs/x.sqlite3", ("sqlite", "/abs/x.sqlite3")),
        ("sqlite:///rel/x.sqlite3", ("sqlite", "rel/x.sqlite3")),
        ("sqlite:////abs/x.sqlite3", ("sqlite", "/abs/x.sqlite3")),
        ("postgresql://u@h/db", ("postgresql", "postgresql://u@h/db")),
    ],
)
def test_split_url(database: str, expected: tuple[str, str]) -> None:
    assert split_url(database) == expected


def test_unknown_scheme_names_what_is_supported() -> None:
    with pytest.raises(ValueError, match=r"unsupported scheme 'mysql'.*sqlite://"):
        open_store("mysql://h/db", {})
    with pytest.raises(ValueError, match="names no location"):
        open_store("sqlite:///", {})


def test_a_sqlite_url_opens_the_same_file_as_its_path(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "c.sqlite3"
    app = create_app({"DATABASE": f"sqlite:///{path}", "TESTING": True})
    with app.app_context():
        store = get_store()
        assert isinstance(store, SqliteStore) and Path(store.path) == path
        task = TaskConfig.create(task_id="t", mechanism="grr", epsilon=1.0, domain=["a", "b"])
        store.create_task(StoredTask(task))
    reopened = create_app({"DATABASE": str(path), "TESTING": True})
    with reopened.app_context():
        assert [t.config.task_id for t in get_store().list_tasks()] == ["t"]
