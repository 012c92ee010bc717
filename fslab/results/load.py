"""Read runs and records from the store and analyse them: the one entry every view uses."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import pandas as pd

from fslab.analysis import FS_FACTOR, Analysis, analyze
from fslab.analysis.groups import normalize_factor
from fslab import metrics
from fslab.metrics.format import clip
from fslab.errors import FslabError
from fslab.store.environment import RunEnvironment, environments_of


@dataclass
class Loaded:
    runs: list[dict]
    records: pd.DataFrame
    analysis: Analysis
    failed_units: list[str] = field(default_factory=list)   # left out of every verdict
    # each run's environment, typed once here: run id -> RunEnvironment, in run order
    environments: dict[str, RunEnvironment] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.environments:
            self.environments = environments_of(self.runs)


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
    records = described_not_ranked(records)
    records, failed = without_failed_units(store, ids, records)
    if records.empty:
        raise FslabError(f"run {', '.join(ids)} has no records of a unit that finished")
    runs = [store.run(r) for r in ids]
    return Loaded(runs, records, analyze(records, factor=factor, order=order, regression=regression,
                                         trials=declared_trials(records),
                                         floors=declared_floors(records)),
                  failed)


def declared_trials(records: pd.DataFrame) -> dict[str, str]:
    """{metric: the metric counting its trials}, as the suites of these records declare
    them (fslab.metrics): the analysis pools those counts over rounds."""
    return metrics.trials(set(records["suite"]))


def declared_floors(records: pd.DataFrame) -> dict[str, float]:
    """{metric: the value below which it is none of it}, as the suites of these records
    declare them (fslab.metrics): the analysis describes, not ranks, a group all below."""
    return metrics.floors(set(records["suite"]))


def described_not_ranked(records: pd.DataFrame) -> pd.DataFrame:
    """Read what earlier fslab versions ranked by mistake as the catalogue declares it:
    described, not ranked (CPU % and CPU seconds of fixed-time jobs once marked 'lower is
    better', which penalises the filesystem that did more work: only operations per
    CPU-second rank CPU; fio's own peak memory, which describes fio, not the filesystem)."""
    pairs = records[["suite", "metric"]].drop_duplicates().itertuples(index=False, name=None)
    unranked = {(s, m) for s, m in pairs if metrics.role(m, s) == "unranked"}
    if not unranked:
        return records
    wrong = pd.MultiIndex.from_frame(records[["suite", "metric"]]).isin(list(unranked)) \
        & records["better"].notna().to_numpy()
    if wrong.any():
        records = records.copy()
        records.loc[wrong, "better"] = None
    return records


KEY = ["run_id", "host", "fs", "variant", "suite", "case", "params", "iteration"]


def without_failed_units(store, ids: Sequence[str], records: pd.DataFrame):
    """Records of failed units (partial numbers of a unit that did not finish) are left
    out of the statistics; the failed units are listed so the report can say so.

    A unit's records may name their own case or params (a task of S3, a job of a job
    file, an aging step): they are the unit's by their artifact, which lies in the unit's
    artifact directory (as Store.finish_unit ties them); records without an artifact are
    the unit's by its key."""
    failed = [u for rid in ids for u in store.units(rid) if u["status"] == "failed"]
    if not failed:
        return records, []
    bad = pd.DataFrame([{k: u[k] for k in KEY} for u in failed])
    by_key = records.merge(bad.assign(_failed=True), on=KEY, how="left")["_failed"].notna()
    dirs = {(u["run_id"], u["artifact_dir"]) for u in failed if u.get("artifact_dir")}
    drop = by_key.to_numpy() | in_dirs(records, dirs)
    text = [f"{u['fs']}{'' if u['variant'] == 'default' else ':' + u['variant']} "
            f"{u['suite']}:{u['case']} #{u['iteration']}: {clip(u.get('message') or '', 240)}"
            for u in failed]
    return records[~drop], text


def in_dirs(records: pd.DataFrame, dirs: set[tuple[str, str]]):
    """Which records' artifact (relative to the results root) is one of these (run, unit
    directory) pairs or lies below one."""
    import numpy as np
    from pathlib import PurePosixPath
    pairs = records[["run_id", "artifact"]]
    inside = [(run_id, art) for run_id, art in set(pairs.dropna().itertuples(index=False, name=None))
              if any((run_id, str(d)) in dirs for d in (PurePosixPath(art), *PurePosixPath(art).parents))]
    if not inside:
        return np.zeros(len(records), dtype=bool)
    return pd.MultiIndex.from_frame(pairs).isin(inside)
