"""Read runs and records from the store and analyse them: the one entry every view uses."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from fslab.analysis import FS_FACTOR, Analysis, analyze
from fslab.analysis.groups import normalize_factor
from fslab.errors import FslabError


@dataclass
class Loaded:
    runs: list[dict]
    records: pd.DataFrame
    analysis: Analysis


def resolve_run_ids(store, run_ids: Sequence[str] | None) -> list[str]:
    """Full run ids (prefixes allowed, like git); none given: the latest run."""
    if not run_ids:
        return [store.latest_run_id()]
    return [store.run(r)["run_id"] for r in run_ids]


def load(store, run_ids: Sequence[str] | None, factor=FS_FACTOR, order: Sequence[str] | None = None,
         regression: bool = True) -> Loaded:
    ids = resolve_run_ids(store, run_ids)
    records = store.records(ids)
    if records.empty:
        raise FslabError(f"run {', '.join(ids)} has no records yet")
    if "host" in normalize_factor(factor):
        # fio's sum over every host of a parallel multi-host run is no host of its own
        records = records[records["host"] != "all"]
    runs = [store.run(r) for r in ids]
    return Loaded(runs, records, analyze(records, factor=factor, order=order, regression=regression))
