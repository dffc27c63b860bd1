"""SQLite's report ids after migration 0007: the same ids refused, kept and collected as before.

The ids of a database at schema 6 (a WITHOUT ROWID table keyed by (task_id, report_id))
move to the rowid table with a unique index: every id known before is still a replay,
whatever time it is resent with, new ids count once, and expired ids are collected.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ldp_telemetry.aggregator.store import StoredTask
from ldp_telemetry.aggregator.store.sqlite.backend import SqliteStore
from ldp_telemetry.shared import TaskConfig
from tests.aggregator.stores import WITHOUT_SLICES
from tests.support.reports import envelopes

SCHEMA_6_SEEN = (
    "CREATE TABLE seen (task_id TEXT NOT NULL, report_id BLOB NOT NULL, "
    "expires INTEGER NOT NULL, PRIMARY KEY (task_id, report_id)) WITHOUT ROWID",
    "CREATE INDEX seen_by_expiry ON seen (expires)",
)


def test_ids_known_at_schema_6_stay_known_after_the_migration(tmp_path: Path) -> None:
    path = str(tmp_path / "ids.sqlite3")
    store = SqliteStore(path)
    store.initialize()
    task = TaskConfig.create(task_id="r", mechanism="rr", epsilon=1.0)
    store.create_task(StoredTask(task))
    kept = envelopes(task, [1, 0, 1, 1], 1.7e9)
    assert store.add_reports(task, kept, [100, 100, 300, 300]) == set()
    with store._write() as tx:  # the ids as schema version 6 kept them
        rows = list(tx.execute("SELECT task_id, report_id, expires FROM seen"))
        tx.execute("DROP TABLE seen")
        for statement in SCHEMA_6_SEEN:
            tx.execute(statement)
        tx.executemany("INSERT INTO seen VALUES (?, ?, ?)", rows)
        for statement in WITHOUT_SLICES["sqlite"]:
            tx.execute(statement)
        tx.execute("DELETE FROM schema_version WHERE version >= 7")
    again = SqliteStore(path)
    again.initialize()  # applies migration 0007
    assert again.schema_change[0] == 6
    with again._read() as tx:
        indexes = {name for _, name, unique, *_ in tx.execute("PRAGMA index_list(seen)") if unique}
        assert indexes == {"seen_by_id"}
    resent = envelopes(task, [0, 0, 0, 0], 1.7e9 + 86_400)  # other times, other payloads
    resent = [replace(e, report_id=k.report_id) for e, k in zip(resent, kept, strict=True)]
    fresh = envelopes(task, [1], 1.7e9)
    assert again.add_reports(task, [*resent, *fresh], [400] * 5) == {e.report_id for e in kept}
    assert again.add_reports(task, fresh, [400]) == {fresh[0].report_id}
    assert again.collect_expired(200) == 2
    assert again.add_reports(task, kept, [500] * 4) == {kept[2].report_id, kept[3].report_id}
    with again._read() as tx:
        ((remembered,),) = tx.execute("SELECT COUNT(*) FROM seen")
    assert remembered == 5  # 3 left after the collection, and the 2 counted again
    with again.read_sums(task, None, None) as sums:
        assert sums.total == 4 + 1 + 2  # each id once while remembered


def test_a_claim_tells_known_ids_from_new_ones_wherever_they_sit(tmp_path: Path) -> None:
    """Ids are inserted first and the known ones read back only on a replay (by rowid):
    known ids before, between and after new ones, of two tasks, after a collection left
    gaps in the rowids and after every row was deleted, are each told apart."""
    store = SqliteStore(str(tmp_path / "claim.sqlite3"))
    store.initialize()
    tasks = [TaskConfig.create(task_id=name, mechanism="rr", epsilon=1.0) for name in "ab"]
    for task in tasks:
        store.create_task(StoredTask(task))
    a, b = tasks
    old = envelopes(a, [1] * 6, 1.7e9)
    assert store.add_reports(a, old, [100, 300] * 3) == set()
    assert store.collect_expired(200) == 3  # rowids 1, 3, 5 gone: gaps
    kept = [old[1], old[3], old[5]]
    new = envelopes(a, [1] * 4, 1.7e9)
    mixed = [kept[0], new[0], new[1], kept[1], new[2], kept[2], new[3], new[0]]
    assert store.add_reports(a, mixed, [400] * 8) == {e.report_id for e in [*kept, new[0]]}
    other = [
        replace(e, report_id=k.report_id)
        for e, k in zip(envelopes(b, [1] * 3, 1.7e9), kept, strict=True)
    ]
    assert store.add_reports(b, other, [400] * 3) == set()  # same ids, another task: new
    assert store.add_reports(b, [*envelopes(b, [1], 1.7e9), other[1]], [400] * 2) == {
        kept[1].report_id
    }
    assert store.collect_expired(500) == 11  # every row: the next rowid starts again at 1
    assert store.add_reports(a, [old[0], old[0], *new[:2]], [600] * 4) == {old[0].report_id}
    many = envelopes(a, [1] * 1000, 1.7e9)  # three INSERTs of ids
    assert store.add_reports(a, many[::2], [600] * 500) == set()
    assert store.add_reports(a, many, [600] * 1000) == {e.report_id for e in many[::2]}
    for task, total in ((a, 6 + 4 + 3 + 1000), (b, 3 + 1)):
        with store.read_sums(task, None, None) as sums:
            assert sums.total == total  # each id once per task while remembered
