"""analyze(records) -> Analysis: every table the report, compare and the terminal show.

Input is the records DataFrame (fslab.records.RECORD_COLUMNS) of any suite. Values are
grouped by what was measured (groups.group_columns) and compared across the factor
(default filesystem + variant; run_id or host to compare runs or machines).

`trials` names the metrics that count successes out of another metric of the same unit
(as the suites declare them: {"silent": "damaged"}); their groups are compared on the
trials pooled over rounds (counts.py), the others round by round (pairwise.py).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from fslab.system import forked
from fslab.analysis.counts import COUNT_COLUMNS, DESIGN, compare_counts, estimates, group_id, pooled_counts
from fslab.analysis.describe import describe, outlier_mask
from fslab.analysis.tiers import tiers
from fslab.analysis.groups import FS_FACTOR, group_columns, normalize_factor, with_levels
from fslab.analysis.omnibus import omnibus
from fslab.analysis.pairwise import PAIR_COLUMNS, PairRow, compare_levels
from fslab.analysis.regression import regression_in_background

@dataclass
class Analysis:
    factor: tuple[str, ...]
    keys: list[str]                 # columns identifying a group (incl. metric and unit)
    levels: list[str]               # factor levels in comparison order (first = baseline)
    data: pd.DataFrame              # the records + level + outlier flag
    summary: pd.DataFrame           # one row per group x level
    omnibus: pd.DataFrame           # one row per group
    pairs: pd.DataFrame             # one row per group x pair of levels
    regression: pd.DataFrame = field(default_factory=pd.DataFrame)
    tiers: pd.DataFrame = field(default_factory=pd.DataFrame)   # every level ranked (tiers.py)
    _wide: pd.DataFrame | None = field(default=None, repr=False, compare=False)

    def per_iteration(self) -> pd.DataFrame:
        """S2's table, done right: one row per (level, workload, iteration), one column
        per metric (with its unit), each value from its own iteration. Made once: the
        report and the exports both show it (callers get a copy to change as they like)."""
        if self._wide is None:
            self._wide = self._per_iteration()
        return self._wide.copy()

    def _per_iteration(self) -> pd.DataFrame:
        idx = [k for k in self.keys if k not in ("metric", "unit")] + ["level", "iteration"]
        d = self.data.assign(column=self.data["metric"] + " [" + self.data["unit"] + "]")
        d = d.drop_duplicates(idx + ["column"])     # identity + metric is unique per record
        wide = d.set_index(idx + ["column"])["value"].unstack("column")
        wide.columns.name = None
        return wide.reset_index()


def analyze(records: pd.DataFrame, factor: str | Sequence[str] = FS_FACTOR,
            order: Sequence[str] | None = None, seed: int = 0,
            regression: bool = True, trials: Mapping[str, str] | None = None,
            floors: Mapping[str, float] | None = None) -> Analysis:
    """`floors`: {metric: the value below which it is none of it} (the catalogue's); a
    group whose every level's median is below is described, not ranked."""
    factor = normalize_factor(factor)
    keys = group_columns(factor) + ["unit"]
    data = with_levels(records, factor)
    levels = _ordered_levels(data["level"].unique(), order)
    data["outlier"] = outlier_mask(data["value"], [data[c] for c in keys + ["level"]])
    directions, mixed = _directions(data, keys)
    unranked = {**mixed, **_below_floor(data, keys, floors or {})}
    directions.loc[list(unranked), "better"] = None
    # the same grouping as the comparisons', so the same order: one direction per group
    group_better = [b if isinstance(b, str) else None for b in directions["better"]]
    if regression:
        regression_table = regression_in_background(data, keys, seed)
    pairable = "run_id" not in factor     # rounds of different runs are unrelated
    counted = pooled_counts(data, keys, trials) if trials else {}
    args = (data, keys, levels, group_better, pairable, seed, counted, unranked)
    # large runs: every other group is compared in a forked child, beside this process
    other_half = (forked.start(_compare_groups, *args, 1, 2)
                  if forked.worth_it("analysis", len(data)) else None)
    summary = describe(data, keys).merge(directions, on=keys, how="left")
    if counted:   # the pooled rate of a count of trials (its median stays the per-round one)
        summary["estimate"] = estimates(counted, summary, keys)
    done = _compare_groups(*args, 0, 2 if other_half else 1)
    if other_half:
        done = sorted(done + other_half(), key=lambda group: group[0])
    omni_rows = [omni for _, omni, _ in done]
    omni_df = pd.DataFrame(omni_rows)
    pairs = _pair_frame([row for _, _, rows in done for row in rows])
    result = Analysis(factor, keys, levels, data, summary, omni_df, pairs,
                      tiers=_tested_by(tiers(summary, pairs, keys), keys, counted, pairs))
    if regression:
        result.regression = regression_table()
    return result


def _compare_groups(data: pd.DataFrame, keys: list[str], levels: list[str],
                    group_better: list[str | None], pairable: bool, seed: int,
                    counted: dict, unranked: dict[int, str], part: int, parts: int
                    ) -> list[tuple[int, dict, list[tuple[dict, PairRow]]]]:
    """Omnibus and pairwise tests of every `parts`-th group from `part` on:
    (group number, omnibus row, (the group's key columns, pair) per pair) per group."""
    done = []
    for i, ((key, g), better) in enumerate(zip(data.groupby(keys, sort=True, dropna=False),
                                               group_better, strict=True)):
        if i % parts != part:
            continue
        ident = dict(zip(keys, key))
        lv, v, it = g["level"].to_numpy(), g["value"].to_numpy(), g["iteration"].to_numpy()
        samples = {name: (v[lv == name], it[lv == name]) for name in levels if (lv == name).any()}
        omni = (asdict(omnibus({k: s[0] for k, s in samples.items()})) if better else
                {"levels": len(samples), "assumptions": unranked.get(i) or "described, not "
                 "ranked: the metric has no better direction"})
        pooled = counted.get(group_id(key))
        pairs = (compare_counts(pooled, better, levels) if pooled else
                 compare_levels(samples, better, pairable, seed_key=(seed, *key)))
        done.append((i, {**ident, "better": better, **omni}, [(ident, row) for row in pairs]))
    return done


def _pair_frame(rows: list[tuple[dict, PairRow]]) -> pd.DataFrame:
    """Analysis.pairs: the group's key columns, then the pair's, in the order of the first
    pair's kind (a counted pair has `design` last, as it always had)."""
    if not rows:
        return pd.DataFrame()
    order = COUNT_COLUMNS if rows[0][1].design == DESIGN else PAIR_COLUMNS
    return pd.DataFrame([{**ident, **row.columns(order)} for ident, row in rows])


def _tested_by(tier_table: pd.DataFrame, keys: list[str], counted: dict,
               pairs: pd.DataFrame) -> pd.DataFrame:
    """Tiers of counted groups name the test their pairs ran (tiers.py names Mann-Whitney)."""
    if not counted or tier_table.empty or "design" not in pairs:
        return tier_table
    pooled = pairs[pairs["design"] == DESIGN]
    tests: dict[tuple, set[str]] = {}
    for key, test in zip(pooled[keys].itertuples(index=False, name=None), pooled["test"]):
        tests.setdefault(group_id(key), set()).add(test)
    names = [tests.get(group_id(key)) for key in tier_table[keys].itertuples(index=False, name=None)]
    tier_table["test"] = [" / ".join(sorted(t)) + ", Holm over all pairs" if t else old
                          for t, old in zip(names, tier_table["test"])]
    return tier_table


def _ordered_levels(found: Iterable[object], order: Sequence[str] | None) -> list[str]:
    names = sorted(str(x) for x in found)
    if not order:
        return names
    first = [o for o in order if o in names]
    return first + [f for f in names if f not in first]


def _below_floor(data: pd.DataFrame, keys: list[str],
                 floors: Mapping[str, float]) -> dict[int, str]:
    """{group number: why it is not ranked} for the groups of a metric with a floor whose
    every level's median is below it: 0.2 B written per transaction against 0 B may test
    significant, and still be no difference anyone could use (nothing was written)."""
    if not floors or not data["metric"].isin(list(floors)).any():
        return {}
    out = {}
    for i, (key, g) in enumerate(data.groupby(keys, sort=True, dropna=False)):
        ident = dict(zip(keys, key))
        floor = floors.get(ident["metric"])
        if floor is not None and g.groupby("level")["value"].median().max() < floor:
            out[i] = (f"described, not ranked: every level's median is below {floor:g} "
                      f"{ident['unit']}, the least that counts (none of it)")
    return out


# a group some of whose records say no direction: fio's whole-millisecond timing of a
# unit whose reads took under 100 ms makes its IOPS unrankable, and ranking the others'
# with them would compare what the unit said cannot be compared
MIXED = ("described, not ranked: some of its values were recorded as not comparable "
         "(a unit's note says why) and the others were not")


def _directions(data: pd.DataFrame, keys: list[str]) -> tuple[pd.DataFrame, dict[int, str]]:
    """Each group's better direction, None when its records disagree (described only), and
    {group number: why} for the groups where some records have a direction and some none."""
    by = data.groupby(keys, sort=True, dropna=False)["better"]
    out = by.agg(["first"]).reset_index()
    kinds = by.nunique(dropna=False).to_numpy()      # no direction counts as one
    out["better"] = out["first"].where(kinds == 1)
    said = by.count().to_numpy()                     # records with a direction
    mixed = {int(i): MIXED for i in np.flatnonzero((said > 0) & (said < by.size().to_numpy()))}
    return out.drop(columns=["first"]), mixed
