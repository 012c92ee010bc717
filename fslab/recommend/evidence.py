"""The evidence a recommendation stands on: the run's verdicts and its feature matrix.

Statistics come from fslab.analysis (pairwise tests, Holm, Cliff's delta); nothing
here tests anything itself. CPU cost per operation is the run's `ops_per_cpu_second`
records (system-wide CPU, daemons included); the only values added are sums of parts
of one measure (fslab.recommend.measures.derived_sums: a task's time until the data
is on disk).
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from fslab.analysis import FS_FACTOR, Analysis, analyze
from fslab.features import matrix as fm
from fslab.recommend.measures import derived_sums
from fslab.records import RECORD_COLUMNS
from fslab.results.provenance import recorded_implementations
from fslab.store.environment import environments_of
from fslab.errors import FslabError
from fslab.results.load import declared_floors, declared_trials, load


@dataclass
class Evidence:
    run_id: str
    analysis: Analysis
    matrix: fm.Matrix
    features_run: str | None        # where the probe outcomes came from (None: claims only)
    records: pd.DataFrame


def gather(store, run_id: str, known: Analysis | None = None) -> Evidence:
    """Records of the run, their analysis, and the feature matrix for its filesystems.

    `known`: an analysis already made of exactly this run's records (the report's); reused
    when it is what gather would compute (nothing derived, fs+variant levels in default order).
    """
    run_id = store.run(run_id)["run_id"]
    reusable = (known is not None and known.factor == FS_FACTOR
                and known.levels == sorted(known.levels) and set(known.data["run_id"].unique()) == {run_id})
    if not reusable:
        # the report's own loading: whatever it leaves out of verdicts, this leaves out too
        known = load(store, [run_id], regression=False).analysis
    records = known.data[list(RECORD_COLUMNS)]
    if records.empty:
        raise FslabError(f"run {run_id} has no records")
    derived = derived_sums(records)
    if derived.empty:
        analysis = known
    else:
        records = pd.concat([records, derived], ignore_index=True)
        analysis = analyze(records, regression=False, trials=declared_trials(records),
                           floors=declared_floors(records))
    outcomes, impls = fm.probe_outcomes(records, store.root)
    features_run = run_id if outcomes else None
    if not outcomes:
        features_run = latest_probe_run(store, set(records["fs"].unique()), exclude=run_id)
        if features_run:
            outcomes, impls = fm.probe_outcomes(store.records(features_run), store.root)
    names = list(analysis.levels)
    # the implementation the run measured (OpenZFS in a guest, zfs-fuse on this host), not
    # the one this machine would use now; probes of another implementation are not its own
    recorded = recorded_implementations(environments_of([store.run(run_id)]))
    ran = {lv: recorded.get(lv) or recorded.get(lv.split(":")[0]) for lv in names}
    # probes ran on the default variant; a variant level borrows its filesystem's outcomes
    outcomes = {(lv, feat): o for lv in names for (fs, feat), o in outcomes.items()
                if fs == lv.split(":")[0] and (ran[lv] is None or impls.get(fs) in (None, ran[lv]))}
    impls = {lv: ran[lv] or impls.get(lv.split(":")[0]) for lv in names}
    impls = {lv: i for lv, i in impls.items() if i}
    m = fm.build(names, outcomes, impls)
    return Evidence(run_id, analysis, m, features_run, records)


def latest_probe_run(store, filesystems: set[str], exclude: str) -> str | None:
    """The newest run in the store whose feature probes cover these filesystems."""
    rows = store.db.execute(
        "SELECT run_id, GROUP_CONCAT(DISTINCT fs) FROM records WHERE suite='features' "
        "AND metric='verified' AND run_id != ? GROUP BY run_id ORDER BY MAX(ts) DESC",
        (exclude,)).fetchall()
    for run_id, fss in rows:
        if filesystems <= set(fss.split(",")):
            return run_id
    return None
