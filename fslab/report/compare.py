"""`fslab compare A B`: each ranked metric of run B against run A, as benchstat and
hyperfine users read it: the change in % with its interval and p-value, and "1.32 ± 0.05×
faster"; warnings where the two runs differ in more than the change being measured; the
`--fail-if-slower` gate for CI.

The statistics are fslab's own (fslab.analysis.analyze with factor="run_id"): values of
two runs are independent samples, so every pair gets the exact Mann-Whitney U test, the
Hodges-Lehmann ratio B/A and the interval from inverting that test (docs/statistics.md).
A run is named `RUN`, `RUN@RESULTS_DIR` (a run of another store) or `@RESULTS_DIR` (that
store's latest run).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Hashable

import pandas as pd

from fslab.analysis.significance import ALPHA
from fslab.errors import FslabError
from fslab.analysis import analyze
from fslab.metrics import is_detail, label as metric_label
from fslab.metrics.format import human
from fslab.store.environment import RunEnvironment
from fslab.analysis import Analysis
from fslab.store import Store

INPUT = 2        # exit code of a mistaken input (fslab.run.validate.CODE)
SLOWER = 1       # exit code of --fail-if-slower when B is slower

# metrics in these units are speeds (a rate, a time or a latency): "faster"/"slower";
# any other ranked metric (write amplification, ops per CPU-second) is "better"/"worse"
SPEED_UNITS = {"ops/s", "B/s", "bytes/s", "s", "ms", "us", "ns"}


@dataclass
class Side:
    """One of the two runs: where it is stored and the name its column gets."""
    store: Store
    run: dict
    label: str = ""
    host: str | None = None     # the one host it measured on, when it compares hosts
    environment: RunEnvironment = field(init=False, repr=False)   # the run's, typed once

    def __post_init__(self) -> None:
        self.environment = RunEnvironment.of_run(self.run)


@dataclass
class Compared:
    a: Side
    b: Side
    analysis: object             # fslab.analysis.Analysis, levels [a.label, b.label]
    rows: pd.DataFrame           # one row per ranked (workload, metric) both runs have
    by_host: bool                # two runs on one host each, different hosts
    only_in: dict[str, int] = field(default_factory=dict)   # label -> groups only it has
    failed_units: list[str] = field(default_factory=list)


def parse_ref(text: str) -> tuple[str, str | None]:
    """'RUN' -> (RUN, None); 'RUN@DIR' -> (RUN, DIR); '@DIR' -> ('', DIR): a run id never
    holds '@', a directory may."""
    run, at, where = text.partition("@")
    if at and not where:
        raise FslabError(f"{text!r}: expected RUN@RESULTS_DIR (a results directory after @)",
                         code=INPUT)
    return run, (where if at else None)


def compare_runs(a: Side, b: Side) -> Compared:
    """Both runs' records side by side, analysed with the run as the factor."""
    # here, not at the top: pandas and scipy load only when this runs
    from fslab.results.load import (declared_floors, declared_trials, described_not_ranked,
                                    without_failed_units)
    if a.run["run_id"] == b.run["run_id"] and Path(a.store.root).resolve() == Path(b.store.root).resolve():
        raise FslabError("compare needs two different runs", code=INPUT)
    hosts_a, hosts_b = _hosts(a), _hosts(b)
    # the same plan on two hosts, one run each: the hosts are what differs (grouped by
    # host, the runs would share no case at all); the columns are named by host
    by_host = len(hosts_a) == len(hosts_b) == 1 and hosts_a != hosts_b
    if by_host:
        (a.host,), (b.host,) = hosts_a, hosts_b
    a.label, b.label = _labels(a, b, by_host)
    parts, failed = [], []
    for side in (a, b):
        recs = side.store.records([side.run["run_id"]])
        if by_host:
            recs = recs[recs["host"] != "all"]
        if recs.empty:
            raise FslabError(f"run {side.run['run_id']} has no records", code=1)
        recs, left_out = without_failed_units(side.store, [side.run["run_id"]], recs)
        failed += [f"{side.label}: {f}" for f in left_out]
        recs = recs.assign(run_id=side.label)
        if by_host:     # the level is the host: the groups must match across the two
            recs = recs.assign(host="")
        parts.append(recs)
    records = described_not_ranked(pd.concat(parts, ignore_index=True))
    analysis = analyze(records, factor="run_id", order=[a.label, b.label], regression=False,
                       trials=declared_trials(records), floors=declared_floors(records))
    rows = comparison_rows(analysis, a.label, b.label)
    if rows.empty:
        raise FslabError(f"runs {a.label} and {b.label} share no ranked case and metric to "
                         "compare", code=INPUT)
    return Compared(a, b, analysis, rows, by_host, _only_in(analysis, a.label, b.label), failed)


def _hosts(side: Side) -> set[str]:
    """The hosts a run measured on (fio's "all" sum of a parallel run is none of them)."""
    return {u["host"] for u in side.store.units(side.run["run_id"])} - {"all"}


def _labels(a: Side, b: Side, by_host: bool) -> tuple[str, str]:
    if by_host and a.host != b.host and a.host is not None and b.host is not None:
        return a.host, b.host
    la, lb = a.run["run_id"], b.run["run_id"]
    if la == lb:        # the same run id in two stores (a copied store)
        la, lb = f"{la}@{a.store.root}", f"{lb}@{b.store.root}"
    return la, lb


def _only_in(analysis: Analysis, la: str, lb: str) -> dict[str, int]:
    """How many ranked groups only one of the runs measured (left out of the comparison)."""
    s = analysis.summary[analysis.summary["better"].notna()]
    levels = s.groupby(analysis.keys, dropna=False)["level"].agg(frozenset)
    return {lv: int(sum(ls == frozenset([lv]) for ls in levels)) for lv in (la, lb)
            if any(ls == frozenset([lv]) for ls in levels)}


def comparison_rows(analysis: Analysis, la: str, lb: str) -> pd.DataFrame:
    """One row per ranked group both runs measured: the medians, the change B/A - 1 in %
    with its interval, p, whether it is significant, and the hyperfine-style factor."""
    # here, not at the top: pandas and scipy load only when this runs
    from fslab.report.headline import answer_metrics
    # here, not at the top: pandas and scipy load only when this runs
    from fslab.report.tables import workload_label
    p = analysis.pairs
    if p.empty:
        return pd.DataFrame()
    p = p[(p["baseline"] == la) & (p["other"] == lb)].copy()
    if p.empty:
        return pd.DataFrame()
    wkeys = [k for k in analysis.keys if k not in ("metric", "unit")]
    show_host = "host" in wkeys and p["host"].nunique() > 1
    p["workload"] = [workload_label(r, show_host) for r in p.to_dict("records")]
    p["metric_label"] = [metric_label(m) for m in p["metric"]]
    idents = list(p[wkeys].itertuples(index=False, name=None))
    ranked: dict[tuple, set[str]] = {}
    for ident, metric in zip(idents, p["metric"]):
        ranked.setdefault(ident, set()).add(metric)
    answers = {ident: answer_metrics(dict(zip(wkeys, ident)).get("suite"),
                                     str(dict(zip(wkeys, ident)).get("case", "")),
                                     dict(zip(wkeys, ident)).get("params"), metrics)
               for ident, metrics in ranked.items()}
    p["answer"] = [m in answers[i] for i, m in zip(idents, p["metric"])]
    p["answer_rank"] = [answers[i].index(m) if m in answers[i] else len(answers[i])
                        for i, m in zip(idents, p["metric"])]
    p["detail"] = p["metric"].map(is_detail)
    p["change_ci_lo"] = (p["ratio_ci_lo"] - 1) * 100
    p["change_ci_hi"] = (p["ratio_ci_hi"] - 1) * 100
    p["speed"] = p["unit"].isin(SPEED_UNITS)
    p["times"] = [times_text(r) for r in p.to_dict("records")]
    p["worse_pct"] = [worse_pct(r) for r in p.to_dict("records")]
    return p.sort_values(["workload", "answer_rank", "metric"], kind="stable").reset_index(drop=True)


def worse_pct(r: dict) -> float:
    """How much worse B is than A by the estimate, in % of A (negative: better): a rate
    below A's, or a time, latency or other lower-is-better metric above it."""
    change = r["change_pct"]
    if change is None or math.isnan(change):
        return math.nan
    return -change if r["better"] == "higher" else change


def times_text(r: dict) -> str:
    """hyperfine's wording: '1.32 ± 0.05× faster' (B against A), from the ratio and its
    interval turned so that the factor is at least 1; asymmetric intervals as
    '1.32 +0.06/−0.04×'. Empty where the values allow no ratio (zero or negative)."""
    ratio, lo, hi = r["ratio"], r["ratio_ci_lo"], r["ratio_ci_hi"]
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return ""
    up, down = ("faster", "slower") if r.get("speed", r["unit"] in SPEED_UNITS) else ("better", "worse")
    gain, glo, ghi = (ratio, lo, hi) if r["better"] == "higher" else (1 / ratio, 1 / hi, 1 / lo)
    if gain >= 1:
        x, xlo, xhi, word = gain, glo, ghi, up
    else:
        x, xlo, xhi, word = 1 / gain, 1 / ghi, 1 / glo, down
    if x == 1:
        return "1.00× (no change)"
    return f"{plus_minus(x, xlo, xhi)}× {word}"


def plus_minus(x: float, lo: float, hi: float) -> str:
    digits = 2 if x < 10 else 1 if x < 100 else 0
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{x:.{digits}f}"
    above, below = f"{hi - x:.{digits}f}", f"{x - lo:.{digits}f}"
    if above == below:
        return f"{x:.{digits}f} ± {above}"
    return f"{x:.{digits}f} +{above}/−{below}"


def change_text(r: dict) -> str:
    """'-24.4% [-26.1%, -22.0%]'; the median difference where no ratio exists."""
    c = r["change_pct"]
    if c is None or math.isnan(c):
        return ""
    if math.isfinite(r["change_ci_lo"]) and math.isfinite(r["change_ci_hi"]):
        return f"{c:+.1f}% [{r['change_ci_lo']:+.1f}%, {r['change_ci_hi']:+.1f}%]"
    return f"{c:+.1f}% (no interval at n={r['n_baseline']}+{r['n_other']})"


def verdict_text(r: dict) -> str:
    if r["significant"] and r["times"]:
        return r["times"]
    if r["significant"]:
        return "significantly " + ("higher" if r["change_pct"] > 0 else "lower")
    return "~"


# --fail-if-slower --------------------------------------------------------------------

@dataclass
class Gate:
    threshold_pct: float
    tested: int                  # answer metrics the gate tested
    slower: pd.DataFrame         # the rows that fail it
    blind: int = 0               # answer metrics no test at these n could flag after Holm
    text: str = ""
    # row index of each tested row -> its p after Holm over the gate's rows: the table marks
    # them, so a raw "p=0.015, 1.32x slower" beside "passed" reads as what it is
    p_gate: dict = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return not self.slower.empty

    def cell(self, index: Hashable) -> str:
        """The table's gate column: '' for a row the gate did not test, else its Holm p and
        whether it failed the gate."""
        if index not in self.p_gate:
            return ""
        p = self.p_gate[index]
        holm_p = "Holm p<0.001" if p < 0.001 else f"Holm p={p:.3f}"
        return f"FAILED ({holm_p})" if index in self.slower.index else f"tested ({holm_p})"


def parse_threshold(text: str) -> float:
    """'5%' or '5' -> 5.0 (percent); anything else is an input error."""
    m = re.fullmatch(r"\s*(\d+(\.\d+)?)\s*%?\s*", text or "")
    if not m or float(m[1]) <= 0:
        raise FslabError(f"--fail-if-slower {text!r}: expected a percentage above 0, e.g. 5%",
                         code=INPUT)
    return float(m[1])


def gate(rows: pd.DataFrame, threshold_pct: float) -> Gate:
    """B fails when an answer metric of a workload (the metrics fslab's answer ranks it
    by, e.g. random read IOPS and p99 read latency) is significantly worse than A's by more
    than the threshold: its exact Mann-Whitney test is significant at 5% after Holm's
    correction over every answer metric the gate tests (so a gate over many workloads
    false-alarms at most 1 run in 20 when nothing changed), and the estimate is more than
    the threshold worse (a rate below, a time or latency above A's by that many %)."""
    # here, not at the top: pandas and scipy load only when this runs
    from fslab.analysis.pairwise import holm
    tested = rows[rows["answer"] & rows["p"].notna()].copy()
    if tested.empty:
        raise FslabError("--fail-if-slower: the two runs share no answer metric with a test "
                         "(each needs 2 values per run)", code=INPUT)
    m = len(tested)
    tested["p_gate"] = holm(list(tested["p"]))
    reachable = tested["smallest_p"] * m < ALPHA
    if not reachable.any():
        n = min(int(tested["n_baseline"].min()), int(tested["n_other"].min()))
        raise FslabError(
            f"--fail-if-slower: with {n} values per run, no test of the {m} answer metrics "
            f"can be significant after Holm's correction over {m} (smallest p "
            f"{tested['smallest_p'].min():.2g} × {m} ≥ {ALPHA}): the gate could never fail. "
            f"Run at least {rounds_needed(m)} rounds (-n), or fewer workloads", code=INPUT)
    slower = tested[(tested["p_gate"] < ALPHA) & (tested["worse_pct"] > threshold_pct)]
    g = Gate(threshold_pct, m, slower, blind=int((~reachable).sum()),
             p_gate=dict(zip(tested.index, map(float, tested["p_gate"]))))
    g.text = gate_text(g)
    return g


def rounds_needed(m: int) -> int:
    """The fewest rounds per run (equal sizes) at which one of m tests can pass Holm."""
    # here, not at the top: pandas and scipy load only when this runs
    from fslab.analysis.pairwise import smallest_p
    return next(n for n in range(2, 100) if smallest_p(n, n) * m < ALPHA)


def gate_text(g: Gate) -> str:
    what = (f"{g.tested} answer metric{'s' if g.tested != 1 else ''}: significantly worse "
            f"(exact Mann-Whitney, Holm over the {g.tested}, α = {ALPHA}) by more than "
            f"{g.threshold_pct:g}%")
    blind = (f"; {g.blind} of them cannot be significant at their number of values"
             if g.blind else "")
    if not g.failed:
        return f"--fail-if-slower {g.threshold_pct:g}%: passed — none of {what}{blind}"
    items = "; ".join(f"{r['workload']} {r['metric_label']} {r['change_pct']:+.1f}% "
                      f"(Holm p={r['p_gate']:.3g})" for r in g.slower.to_dict("records"))
    return (f"--fail-if-slower {g.threshold_pct:g}%: FAILED — {len(g.slower)} of {what}"
            f"{blind}: {items}")


# what else differs between the runs --------------------------------------------------

BUSY_PRESSURE = 10.0    # % of the last 10 s some task waited for a CPU


def environment_notes(a: Side, b: Side, by_host: bool) -> list[str]:
    """What else differs between the two runs besides what is being compared: the
    machine (kernel, tools such as fio and mkfs, CPU, memory, target), the profile and what
    the plans asked (fio options, rounds). Variants' mkfs/mount options are the options
    table's (fslab.report.options)."""
    ea, eb = a.environment, b.environment
    diffs = []
    if not by_host and ea.hostname and eb.hostname and ea.hostname != eb.hostname:
        diffs.append(f"host {ea.hostname} → {eb.hostname}")
    fa, fb = ea.host_facts(), eb.host_facts()
    for name in fa:
        if name in fb and fa[name] != fb[name]:
            diffs.append(f"{name} {fa[name]} → {fb[name]}")
    mem_a, mem_b = ea.memory_total, eb.memory_total
    if mem_a and mem_b and mem_a != mem_b:
        diffs.append(f"memory {human(mem_a, 'B')} → {human(mem_b, 'B')}")
    ta, tb = ea.tools, eb.tools
    for tool in sorted(set(ta) & set(tb)):
        if ta[tool] != tb[tool]:
            diffs.append(f"{tool} {ta[tool]} → {tb[tool]}")
    for key in ("kind", "backing"):
        va, vb = ea.target.get(key), eb.target.get(key)
        if va is not None and vb is not None and va != vb:
            diffs.append(f"target {key} {_short(va)} → {_short(vb)}")
    pa, pb = ea.profile_name, eb.profile_name
    if pa and pb and pa != pb:
        diffs.append(f"profile {pa} → {pb}")
    notes = []
    if diffs:
        notes.append("the runs' environments differ, so the comparison measures these too: "
                     + "; ".join(diffs))
    plan = plan_differences(a.run.get("plan") or "", b.run.get("plan") or "")
    if plan:
        notes.append("the runs' plans differ: " + "; ".join(plan))
    return notes


def _short(v: object) -> str:
    if isinstance(v, dict):
        return ",".join(f"{k}={x}" for k, x in v.items() if x not in (None, ""))
    return str(v)


def plan_differences(text_a: str, text_b: str) -> list[str]:
    """Every key the two stored plans set differently ('suite fio: fio.rate_iops – → 500'),
    except the run's name and the filesystems (the options table shows those)."""
    import tomllib
    try:
        da, db = tomllib.loads(text_a), tomllib.loads(text_b)
    except tomllib.TOMLDecodeError:
        return []
    if not text_a or not text_b:
        return []
    fa, fb = _flat_plan(da), _flat_plan(db)
    return [f"{k} {fa.get(k, '–')} → {fb.get(k, '–')}" for k in sorted(set(fa) | set(fb))
            if fa.get(k) != fb.get(k)]


def _flat_plan(plan: dict) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in (plan.get("run") or {}).items():
        if k != "name":
            out[f"run {k}"] = _value(v)
    for i, suite in enumerate(plan.get("suite") or []):
        name = f"suite {suite.get('kind', i)}"
        for k, v in _flatten(suite).items():
            if k != "kind":
                out[f"{name}: {k}"] = v
    for k, v in plan.items():
        if k not in ("run", "suite", "filesystem"):
            for kk, vv in _flatten({k: v}).items():
                out[kk] = vv
    return out


def _flatten(d: dict, prefix: str = "") -> dict[str, str]:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = _value(v)
    return out


def _value(v: object) -> str:
    return ",".join(map(str, v)) if isinstance(v, list) else str(v)


def busy_notes(sides: list[Side]) -> list[str]:
    """A run that started while other work kept this machine's CPUs busy (the load fslab
    recorded as the run started: CPU pressure, load average). Runs on fio hosts measured
    elsewhere, and runs recorded before fslab kept the load, say nothing."""
    notes = []
    for side in sides:
        env = side.environment
        load = env.load
        if load is None or env.target.get("kind") == "hosts":
            continue
        pressure, avg = load.cpu_pressure_avg10, load.loadavg_1min
        cpus = env.cpus
        busy = (pressure >= BUSY_PRESSURE if pressure is not None else
                avg is not None and avg >= cpus)
        if not busy:
            continue
        facts = []
        if pressure is not None:
            facts.append(f"some task waited for a CPU {pressure:.0f}% of the 10 s before")
        if avg is not None:
            facts.append(f"load average {avg:.1f} on {cpus} CPU{'s' if cpus != 1 else ''}")
        notes.append(f"{env.hostname or 'the host'} was busy with other work when run "
                     f"{side.label} started ({', '.join(facts)}): its numbers may be noisier "
                     "or lower than on a quiet machine")
    return notes


def notes_for(c: Compared) -> list[str]:
    """Every warning of a comparison, in the order the reader needs them."""
    notes = environment_notes(c.a, c.b, c.by_host) + busy_notes([c.a, c.b])
    for label, count in c.only_in.items():
        notes.append(f"{count} ranked metric{'s' if count != 1 else ''} only {label} measured: "
                     "left out")
    return notes + [f"failed unit, left out: {f}" for f in c.failed_units]


# what the tables show -------------------------------------------------------------------

def shown_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The terminal's rows: each workload's answer metrics, then its other ranked headline
    metrics (fio workloads: throughput and p99 latency; other suites: every ranked metric
    that is not a distribution detail)."""
    # here, not at the top: pandas and scipy load only when this runs
    from fslab.report.terminal import HEADLINE, IO_METRICS
    io = rows["metric"].isin(IO_METRICS).groupby(rows["workload"]).transform("any")
    keep = rows["answer"] | (~rows["detail"] & ~io) | (io & rows["metric"].isin(HEADLINE))
    return rows[keep]


def table_cells(r: dict, la: str, lb: str) -> dict[str, str]:
    # here, not at the top: pandas and scipy load only when this runs
    from fslab.analysis.pairwise import format_p
    # the label alone: each value says its unit as it is printed ("p99 write latency [ns]"
    # stood above values in µs and ms)
    return {"workload": r["workload"], "metric": r["metric_label"],
            "": {"higher": "↑", "lower": "↓"}.get(r["better"], ""),
            la: human(r["median_baseline"], r["unit"]), lb: human(r["median_other"], r["unit"]),
            "change [95% CI]": change_text(r),
            "p": format_p(r["p"]) if not math.isnan(r["p"]) else "",
            "vs baseline": verdict_text(r), "note": r.get("note") or ""}


def footnotes(rows: pd.DataFrame) -> list[str]:
    levels = sorted({round(x, 3) for x in rows["ratio_ci_level"] if not math.isnan(x)})
    level = ("at least 95%" + (f" (exactly {', '.join(f'{x:.1%}' for x in levels)} at these n)"
                               if levels else ""))
    return [
        "change: the Hodges-Lehmann ratio B/A − 1 (the median, on a log scale, of the ratios "
        "of every value of B to every value of A); [95% CI]: the interval from inverting the exact Mann-Whitney test, "
        f"coverage {level}; p: exact two-sided Mann-Whitney U (ties as midranks). Two runs are "
        "independent samples, so nothing is paired across them (docs/statistics.md).",
        f"'1.32 ± 0.05× faster': how many times faster (better, for metrics that are neither "
        f"a rate nor a time) B is than A, with the same interval; '~': p ≥ {ALPHA}, no "
        "significant difference (the change and its interval are still the best estimate).",
    ]


GATE_NOTE = ("gate: the rows --fail-if-slower tested (each workload's answer metrics), with "
             "their p after Holm's correction over all of them, which is what the gate "
             "compares with α; the p column is each row's own test, before that correction.")
