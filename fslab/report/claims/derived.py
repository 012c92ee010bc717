"""Claims whose published side is a procedure, not a number: S2's notebook ordered the four
filesystems per workload and tested whether they differ (one-way ANOVA, Kruskal-Wallis when
its assumptions fail; a paired Wilcoxon of ext4 vs btrfs), pooling all workloads. Here each
is re-derived from this run's records, per workload (pooling workloads mixes IOPS of
different jobs: one of the notebook's mistakes), with the answer's own tests."""
from __future__ import annotations

import math
from itertools import combinations

import pandas as pd

from fslab.metrics import label as metric_label
from fslab.analysis.omnibus import omnibus
from fslab.report.claims.judge import HOLDS, NO_DIFFERENCE, NOT_MEASURED, fmt, series
from fslab.report.claims.kinds import qualify
from fslab.report.claims.stats import ALPHA, holm, pair_test
from fslab.store.environment import RunEnvironment


def s2_rows(spec: dict, recs: pd.DataFrame, env: RunEnvironment | dict | None = None) -> list[dict]:
    """The ordering per workload and metric, and the pair test; each qualified as the other
    claims are (zfs-fuse: not comparable; the profile and a TCG guest said)."""
    env = RunEnvironment.of(env or {})
    study = spec["study"]
    derived = spec.get("derived") or {}
    fio = recs[recs["suite"] == spec.get("suite", "fio")]
    levels = sorted(set(fio["label"]))
    rows = []
    for workload, metrics in (derived.get("workloads") or {}).items():
        for metric in metrics:
            rows.append(_ordering(study, workload, metric, fio[fio["case"] == workload], levels))
    a, b = derived.get("pair") or ("ext4", "btrfs")
    rows.append(_pair(study, a, b, fio, derived.get("workloads") or {}))
    for r, labels in zip(rows, [levels] * (len(rows) - 1) + [[a, b]]):
        r["verdict"], r["why"] = qualify(r["verdict"], r["why"], env, labels)
    return rows


def _row(study, claim, published, measured, verdict, why) -> dict:
    return {"study": study, "claim": claim, "published": published, "measured": measured,
            "verdict": verdict, "why": why}


PUBLISHED_ORDER = ("the notebook: bar plots per workload, one-way ANOVA per metric (Kruskal-Wallis "
                   "when Shapiro-Wilk or Levene fail), all workloads pooled; no result is quoted "
                   "in the study summary")


def _ordering(study: str, workload: str, metric: str, g: pd.DataFrame, levels: list[str]) -> dict:
    label = metric_label(metric)
    claim = f"{workload}: the filesystems differ in {label}; their order"
    samples = {lv: series(g, lv, metric) for lv in levels}
    samples = {lv: v for lv, v in samples.items() if not v.empty}
    if len(samples) < 2:
        return _row(study, claim, PUBLISHED_ORDER, "–", NOT_MEASURED,
                    f"no {label} of {workload} for two filesystems in this run")
    unit = str(g.loc[g["metric"] == metric, "unit"].iloc[0])
    better = str(g.loc[g["metric"] == metric, "better"].iloc[0] or "higher")
    order = sorted(samples, key=lambda lv: samples[lv].median(), reverse=(better == "higher"))
    separated = _separated(samples)
    parts = [f"{order[0]} {fmt(float(samples[order[0]].median()), unit)}"]
    for x, y in zip(order, order[1:]):
        sign = ">" if separated.get(frozenset((x, y))) else "≈"
        parts.append(f"{sign} {y} {fmt(float(samples[y].median()), unit)}")
    line = " ".join(parts) + f" ({'higher' if better == 'higher' else 'lower'} is better; medians; > where "\
        "the pair test separates the neighbours, Holm over all pairs)"
    o = omnibus({lv: v.to_numpy() for lv, v in samples.items()})
    if math.isnan(o.kw_p):
        return _row(study, claim, PUBLISHED_ORDER, line, NO_DIFFERENCE, o.assumptions)
    anova_ok = "assumptions hold" in o.assumptions
    tests = [("ANOVA", o.anova_p), ("Kruskal-Wallis", o.kw_p)]
    (test, p), (other, other_p) = tests if anova_ok else tests[::-1]
    why = f"{test} p = {p:.3g} ({other} p = {other_p:.3g}; {o.assumptions})"
    return _row(study, claim, PUBLISHED_ORDER, line, HOLDS if p < ALPHA else NO_DIFFERENCE, why)


def _separated(samples: dict[str, pd.Series]) -> dict[frozenset, bool]:
    """Every pair of levels: is it separated by the pair test, Holm over all pairs?"""
    pairs = list(combinations(samples, 2))
    ps = []
    for x, y in pairs:
        a, b = samples[x], samples[y]
        ps.append(pair_test(a.to_numpy(), b.to_numpy(), a.index.to_numpy(), b.index.to_numpy())["p"]
                  if len(a) >= 2 and len(b) >= 2 else math.nan)
    tested = [i for i, p in enumerate(ps) if not math.isnan(p)]
    adjusted = holm([ps[i] for i in tested]) if tested else []
    out = {frozenset(pairs[i]): False for i in range(len(pairs))}
    for i, p in zip(tested, adjusted):
        out[frozenset(pairs[i])] = bool(p < ALPHA)
    return out


def _pair(study: str, a: str, b: str, fio: pd.DataFrame, workloads: dict) -> dict:
    claim = f"{a} and {b} differ (the notebook's paired Wilcoxon)"
    published = ("the notebook: Wilcoxon signed-rank of ext4 vs btrfs paired by (workload, "
                 "iteration), all workloads pooled; no result is quoted in the study summary")
    levels = set(fio["label"])
    if a not in levels or b not in levels:
        missing = " and ".join(x for x in (a, b) if x not in levels)
        return _row(study, claim, published, "–", NOT_MEASURED, f"{missing} not run")
    results = []
    for workload, metrics in workloads.items():
        g = fio[fio["case"] == workload]
        metric = metrics[0]
        x, y = series(g, a, metric), series(g, b, metric)
        if len(x) >= 2 and len(y) >= 2:
            t = pair_test(x.to_numpy(), y.to_numpy(), x.index.to_numpy(), y.index.to_numpy())
            results.append((workload, metric, float(x.median()), float(y.median()), t["p"]))
    if not results:
        return _row(study, claim, published, "–", NOT_MEASURED,
                    "fewer than 2 rounds of both on any workload")
    adjusted = holm([r[4] for r in results])
    differ = [r for r, p in zip(results, adjusted) if p < ALPHA]
    measured = "; ".join(f"{w}: {b}/{a} {fmt(mb / ma if ma else math.nan, 'ratio')}"
                         f"{' (separated)' if p < ALPHA else ''}"
                         for (w, _, ma, mb, _), p in zip(results, adjusted))
    why = (f"separated in {len(differ)} of {len(results)} workloads (the answer's pair test, "
           f"Holm over the workloads; least p = {min(adjusted):.3g}), tested per workload: pooling "
           "IOPS of different jobs mixes their scales")
    return _row(study, claim, published, measured, HOLDS if differ else NO_DIFFERENCE, why)

