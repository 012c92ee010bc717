"""Display tables built from an Analysis: shared by the terminal, Markdown and HTML."""
from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from fslab.analysis import Analysis
from fslab.metrics import is_detail, label as metric_label
from fslab.metrics.declared import DEVICE_COUNTERS, FIO_RATES
from fslab.metrics.format import heading, human, spread
from fslab.report.sharpness import sharpen
from fslab.report.verdicts import best_text, ranking_text, says_why
from fslab.records import level_label
from fslab.store.environment import RunEnvironment
from fslab.analysis.omnibus import MIN_N_TO_CHECK
from fslab.analysis.groups import FS_FACTOR, level_labels


def workload_label(row: Mapping[str, Any], show_host: bool = False) -> str:
    """'fio:randwrite', plus params when a case has any ('bs=4k'), and the host when
    the analysis spans several."""
    label = f"{row['suite']}:{row['case']}"
    params = row.get("params") or "{}"
    if params != "{}":
        import orjson
        shown = {k: v for k, v in orjson.loads(params).items() if v != row["case"]}  # no echo
        if shown:
            label += " " + " ".join(f"{k}={v}" for k, v in shown.items())
    if "fs" in row:            # the factor is a run or host: each fs is its own group
        label = f"{level_label(row['fs'], row.get('variant'))} {label}"
    if show_host and row.get("host"):
        label = f"{row['host']} {label}"
    return label


def verdict_table(a: Analysis, headline: bool = True) -> pd.DataFrame:
    """One row per group: each level's median ±CI, the best level and the verdict
    (best vs runner-up). Unranked metrics show their medians and 'not ranked'; with
    `headline`, distribution details (*_min/_max/_pNN) and all-zero unranked metrics
    are left out."""
    s = a.summary
    if headline:
        s = s[~s["metric"].map(is_detail)]
        all_zero = s.groupby(a.keys, dropna=False)["max"].transform(lambda m: (m == 0).all())
        s = s[s["better"].notna() | ~all_zero]
    tier = sharpen(a).set_index(a.keys) if not a.tiers.empty else None
    rows = []
    show_host = "host" in a.keys and a.data["host"].nunique() > 1
    for key, g in s.groupby(a.keys, sort=True, dropna=False):
        ident = dict(zip(a.keys, key))
        unit = ident["unit"]
        row = {"workload": workload_label(ident, show_host),
               "metric": heading(metric_label(ident["metric"], ident.get("suite")), unit), "metric_key": ident["metric"]}
        for _, lv in g.iterrows():
            row[lv["level"]] = f"{human(lv['median'], unit)} {spread(lv['median_ci_lo'], lv['median_ci_hi'], lv['median'])}".strip()
        better = g["better"].iloc[0]
        if not isinstance(better, str):
            row.update(best="", verdict="not ranked", note="")
        elif tier is not None and key in tier.index:
            T = tier.loc[key]
            said = not says_why(T)      # '~ (could see ≥ 23%)' in place of its reason
            row.update(best=best_text(T),
                       verdict=(ranking_text(T) if said else "~") if T["one_tier"] else ranking_text(T),
                       note="" if said else T["why"])
        else:
            row.update(best="", verdict="", note="one level only")
        row["direction"] = {"higher": "↑", "lower": "↓"}.get(better, "")
        rows.append(row)
    cols = ["workload", "metric", "direction", *a.levels, "best", "verdict", "note", "metric_key"]
    return pd.DataFrame(rows, columns=cols).fillna("")


def footnotes(a: Analysis) -> list[str]:
    notes = []
    missing = a.summary["median_ci_note"] != ""
    if (~missing).any():
        notes.append("± is the order-statistic interval of the median (at least 95% coverage, "
                     "distribution-free)" + (f"; blank where {a.summary.loc[missing, 'median_ci_note'].iloc[0]}"
                                             if missing.any() else ""))
    elif len(a.summary):
        notes.append("No interval of the median is shown: "
                     + a.summary["median_ci_note"].iloc[0])
    if not a.pairs.empty:
        tests = [t + (" (exact permutation p-values, ties as midranks)" if t == "Mann-Whitney U" else "")
                 for t in sorted(set(t for t in a.pairs["test"] if t))]
        notes.append("verdict: every filesystem best first; ≫ = the Holm-corrected test of "
                     "every pair across the step is significant, ≈ = the test of every pair "
                     "within a tier is not; where no such tiers exist, letters: filesystems "
                     "sharing a letter are not told apart, the rest are; (0.05×) = ratio to "
                     "the best (within-round geometric-mean ratio where rounds pair them); "
                     "'~' = no pair is significant. "
                     + (f"Tests, chosen by the design (docs/statistics.md): {'; '.join(tests)}."
                        if tests else "No test ran: too few rounds."))
    if int(a.summary["outliers"].sum()):
        notes.append(f"{int(a.summary['outliers'].sum())} of {int(a.summary['n'].sum())} values flagged "
                     "as outliers (|x − median| > 10 × 1.4826 MAD, or 1.2533 × the mean absolute "
                     "deviation where the MAD is 0), kept in every statistic.")
    return notes


def pairs_table(a: Analysis) -> pd.DataFrame:
    """Every pairwise comparison with its raw numbers (for CSV/HTML appendices)."""
    if a.pairs.empty:
        return a.pairs
    p = a.pairs.copy()
    p.insert(0, "workload", [workload_label(r) for r in p.to_dict("records")])
    return p




TOO_FEW_TO_CHECK = "too few values to check"


def assumption_checks(a: Analysis, too_few: str | None = TOO_FEW_TO_CHECK) -> pd.DataFrame:
    """The omnibus table, with Shapiro-Wilk's and Levene's p-values replaced by `too_few`
    where a level of a ranked metric has fewer than MIN_N_TO_CHECK values: at n=2 Levene says "variances
    differ" whatever the values, at n=3 "hold" for SDs of 1 and 245 (fslab/analysis/omnibus.py)."""
    omni = a.omnibus
    checks = [c for c in ("shapiro_p", "levene_p") if c in omni.columns]
    if omni.empty or not checks:
        return omni
    fewest = a.summary.groupby(a.keys, dropna=False)["n"].min().rename("_fewest").reset_index()
    small = (omni[a.keys].merge(fewest, on=a.keys, how="left")["_fewest"] < MIN_N_TO_CHECK).to_numpy()
    if "better" in omni.columns:    # a metric described, not ranked, is tested for nothing
        small = small & omni["better"].notna().to_numpy()
    if not small.any():
        return omni
    omni = omni.copy()
    for c in checks:
        omni[c] = omni[c].astype(object)
        omni.loc[small, c] = too_few
    return omni


def adaptive_rounds(run: dict) -> dict | None:
    """How adaptive rounds ended in this run (fslab/run/adaptive.py saves it in the run's
    environment), for every view: a header sentence, one row per case (rounds run, whether
    its widest 95% CI reached the target) and the optional-stopping caveat. None when the
    run's rounds were fixed."""
    ad = RunEnvironment.of_run(run).adaptive
    if ad is None:
        return None
    rows = []
    for name, c in sorted((ad.get("cases") or {}).items()):
        width = c.get("widest_ci")
        if c.get("assessed") is False:
            state = "not assessed (no ranked throughput, time or latency)"
        elif c.get("converged"):
            state = "converged"
        else:
            state = "not converged"
        rows.append({"case": _case_label(name), "rounds": c.get("rounds"), "converged": state,
                     "widest CI": "" if c.get("assessed") is False else
                     (f"±{width:.1%}" if isinstance(width, (int, float)) else "unknown"),
                     "where": c.get("where") or ""})
    done = sum(r["converged"] == "converged" for r in rows)
    target = ad.get("target_ci")
    head = (f"adaptive rounds: another round of a case while a 95% CI was wider than "
            f"±{target:.1%} of its mean" if isinstance(target, (int, float)) else "adaptive rounds")
    head += (f", {ad.get('min_iterations')} to {ad.get('max_iterations')} rounds: "
             f"{done} of {len(rows)} cases converged")
    return {"run_id": run.get("run_id"), "summary": head, "cases": rows,
            "caveat": ad.get("caveat") or ""}


def _case_label(name: str) -> str:
    """'fio randread {"workload":"randread"}' (adaptive.py's key) as 'fio:randread'."""
    suite, _, rest = name.partition(" ")
    case, brace, params = rest.partition(" {")
    return workload_label({"suite": suite, "case": case, "params": brace.strip() + params or "{}"})


# Whether the device or memory served a workload is read from the device counters beside
# fio's numbers (fslab/fio/accounting.py; the report flags shares below half). Runs made
# before device accounting, imported fio JSON, the hosts of a --hosts run, a --mountpoint on
# no block device and dedup's read phase have none: the report says so instead of nothing.
NOT_CHECKED = "not checked (no device counters in this run)"
FIO_IO = FIO_RATES


def memory_checks(records: pd.DataFrame) -> dict[tuple, dict[str, list[str]]]:
    """(suite, case, params) of every workload whose fio moved data -> its "levels"
    (filesystems) and the "unchecked" ones, of which some unit has no device counters.
    A unit's records share its artifact (fio's JSON), also a job file's per-job records;
    records without an artifact are a unit's by their key."""
    if records.empty or not {"metric", "artifact"} <= set(records.columns):
        return {}
    io = records["metric"].isin(FIO_IO) & (records["value"] > 0)
    if not io.any():
        return {}
    key = records["run_id"].astype(str)
    for col in ("host", "fs", "variant", "suite", "case", "params", "iteration"):
        key = key + "\0" + records[col].astype(str)
    unit = records["run_id"].astype(str) + "\0" + records["artifact"].where(
        records["artifact"].notna(), key).astype(str)
    counted = set(unit[records["metric"].isin(DEVICE_COUNTERS)])
    moved = records[io].assign(_unchecked=~unit[io].isin(counted).to_numpy(),
                               _level=level_labels(records[io], FS_FACTOR).to_numpy())
    return {ident: {"levels": sorted(set(g["_level"])),
                    "unchecked": sorted(set(g.loc[g["_unchecked"], "_level"]))}
            for ident, g in moved.groupby(["suite", "case", "params"], sort=True, dropna=False)}


def memory_unchecked_text(checks: dict[tuple, dict[str, list[str]]],
                          records: pd.DataFrame) -> str | None:
    """One sentence for the answer: the workloads nobody checked for being served from
    memory, or None when every workload that moved data had device counters."""
    unchecked = {ident: c for ident, c in checks.items() if c["unchecked"]}
    if not unchecked:
        return None
    why = NOT_CHECKED
    if records["metric"].isin(DEVICE_COUNTERS).any():    # other units of the run had them
        why = "not checked (no device counters beside these numbers)"
    elif records["run_id"].nunique() > 1:
        why = why.replace("this run", "these runs")
    if len(unchecked) == len(checks) and all(c["unchecked"] == c["levels"] for c in checks.values()):
        where = "every workload that moved data"
    else:
        where = ", ".join(
            workload_label({"suite": s, "case": c, "params": p})
            + ("" if chk["unchecked"] == chk["levels"] else f" ({', '.join(chk['unchecked'])})")
            for (s, c, p), chk in unchecked.items())
    return f"served from memory? {why}: {where}"
