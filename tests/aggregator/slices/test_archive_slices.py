"""The report archive and sums files keep the slice: an archiving task with dimensions,
exported as Parquet and re-summed (the Dask job's fold, run here in process), reads per
slice exactly as the store does."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ldp_telemetry.aggregator.archive.parquet import SumsFile, write_archive, write_sums
from ldp_telemetry.aggregator.archive.resum import Partial, fold_file
from ldp_telemetry.aggregator.store import StoredTask
from tests.aggregator.slices.test_store_slices import fill, tasks
from tests.aggregator.stores import Stores


def test_an_archive_resummed_per_slice_equals_the_store(stores: Stores, tmp_path: Path) -> None:
    store = stores.open("sqlite", staged_bytes=1)
    sliced, plain = tasks("cms")
    store.create_task(StoredTask(sliced, archive=True))
    store.create_task(StoredTask(plain))
    sent = fill(store, sliced, plain, np.random.default_rng(9), 60)
    total, files = write_archive(sliced, store.archived(sliced), tmp_path / "arc")
    assert total == len(sent)
    summed = sum((fold_file(str(path)) for path in files), Partial.of([]))
    rows = [
        (int(k[0]), int(k[1]), int(k[2]), int(n), c)
        for k, n, c in zip(summed.keys, summed.n, summed.counters, strict=True)
    ]
    write_sums(sliced, rows, tmp_path / "sums.parquet")
    resummed = SumsFile(tmp_path / "sums.parquet")
    assert resummed.slice_counts(sliced, None, None) == store.slice_counts(sliced, None, None)
    kept_read, again_read = (
        store.read_slices(sliced, None, None),
        resummed.read_slices(sliced, None, None),
    )
    with kept_read as kept_slices, again_read as again_slices:
        assert again_slices.counts == kept_slices.counts
        for slices in (None, [0], [4], [5, 11], [7]):
            kept, again = kept_slices.sums(slices), again_slices.sums(slices)
            assert again.total == kept.total
            assert np.array_equal(again.n, kept.n)
            assert np.array_equal(again.table, kept.table[:])
