"""The numeric rows' runs kept as output counts, to re-answer the same draws with changed code.

Drawing a run (a population's devices, their Square Wave reports) takes milliseconds; answering
it (a log-spline fit and its bootstrap refits) seconds. ``python -m
simulations.coverage.numeric_rows --store-counts DIR`` writes each case's runs (one ``.npz`` a
case: every run's hash seed and output counts, the task's fields, and the truth of each
statistic the default query names) and ``--from-counts DIR`` answers them again with the code
as it is, printing the same table: a change to the estimator is measured on the very draws a
stored table was made of.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ldp_telemetry.shared.mechanisms.numeric.estimate import DEFAULT_QUERY
from simulations.coverage.cases import Case, builder
from simulations.coverage.experiment import Drawn


def path(folder: Path, seed: int, setting: int, position: int) -> Path:
    """Return where a case is stored: ``position`` its place among the setting's cases."""
    return folder / f"{seed}-{setting}-{position}.npz"


def store(
    folder: Path,
    seed: int,
    setting: int,
    position: int,
    fields: dict[str, Any],
    case: Case,
    drawn: Sequence[Drawn],
) -> Path:
    """Write a case's runs (hash seeds, output counts, reports) with its task and truth."""
    folder.mkdir(parents=True, exist_ok=True)
    names = list(DEFAULT_QUERY)
    meta = {
        "seed": seed,
        "setting": setting,
        "kind": case.kind,
        "label": case.setting,
        "population": case.population,
        "fields": fields,
        "costly": case.costly,
        "truth": dict(zip(names, case.truth(names).tolist(), strict=True)),
    }
    target = path(folder, seed, setting, position)
    np.savez_compressed(
        target,
        meta=np.array(json.dumps(meta)),
        seeds=np.array([run.seed for run in drawn], dtype=np.int64),
        n=np.array([run.sums.n for run in drawn], dtype=np.int64),
        table=np.array([run.sums.table for run in drawn], dtype=np.int64),
    )
    return target


def load(file: Path) -> tuple[Case, list[Drawn]]:
    """Return a stored case (its truth the stored one's) and its runs, the task rebuilt."""
    with np.load(file, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
        seeds, n, table = data["seeds"], data["n"], data["table"]
    build = builder("numeric", meta["fields"])
    truth = meta["truth"]
    case = Case(
        meta["kind"],
        meta["label"],
        meta["population"],
        build,
        np.empty(0),
        None,
        lambda names: np.array([truth.get(name, np.nan) for name in names], dtype=float),
        numeric=True,
        costly=meta["costly"],
    )
    drawn = []
    for seed, count, counts in zip(seeds.tolist(), n, table, strict=True):
        mechanism = build(int(seed))
        sums = mechanism.new_sums()
        sums.load(count, counts)
        drawn.append(Drawn(int(seed), mechanism, sums))
    return case, drawn


def stored(folder: Path, seed: int, settings: Sequence[int]) -> list[Path]:
    """Return the stored cases of ``seed`` and ``settings``, in the order they were drawn."""
    found = []
    for setting in settings:
        files = folder.glob(f"{seed}-{setting}-*.npz")
        found += sorted(files, key=lambda f: int(f.stem.rsplit("-", 1)[1]))
    return found
