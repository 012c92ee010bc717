"""The self-contained offline HTML report (Jinja2, inline SVG, no scripts, no network).

A decision document: the answer, one figure per workload that shows the decision (each
filesystem's ratio to the best with its interval and group), the options compared, the
recommendation for the priorities asked; then per workload its verdicts (each once),
its ranked metrics (medians with the intervals the verdicts print), latency
distributions, and what was not ranked folded away; checks and appendices fold into
<details>. Every title names a metric as a person says it (fslab.analysis.names).

Jinja autoescapes every value; only SVG made by matplotlib or fslab/report/svgplot.py
(both escape their own text) and sections from fslab/report/figures are inserted as markup.
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Iterable

import orjson
import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from fslab.metrics import label as metric_label
from fslab.decide.decision import cells, narrative, tail, verdict_line
from fslab.decide.result import Decision, stored_decisions
from fslab.analysis.omnibus import MIN_N_TO_CHECK
from fslab.metrics import is_detail
from fslab.report.figures import (FigureContext, decision, latency_cdf, lead_sections, over_time,
                                  sections_for)
from fslab.metrics.format import heading, human, human_spread
from fslab.results.load import Loaded
from fslab.analysis import Analysis
from fslab.report.figures import Section
from fslab.store.environment import RunEnvironment
from fslab.report.svgplot import dot_interval
from fslab.report.plots import described_metrics, medians_and_points, residual_qq
from fslab.report.headline import answer_metrics, headline, headline_text
from fslab.report.sharpness import sharpen
from fslab.report.verdicts import LEGEND, ranking_text
from fslab.results.provenance import measured_as, measured_where
from fslab.fio.cachepolicy import describe_run
from fslab.report.options import html_table
from fslab.report.claims import claims_json, html_rows
from fslab.metrics.format import cell as fmt_float
from fslab.report.tables import (adaptive_rounds, assumption_checks, footnotes, memory_checks,
                                 memory_unchecked_text, pairs_table, verdict_table,
                                 workload_label)

MAX_ITERATION_ROWS = 2000    # the per-iteration table beyond this lives in the CSV only
MAX_ARTIFACT_LINKS = 500
# the metrics whose records point at the fio JSON (and logs) the raw-artifact figures read
RAW_ANCHORS = (*latency_cdf.ANCHORS.values(), *over_time.ANCHORS)
_SUMMARY_COLS = {"level": "filesystem", "n": "n", "median": "median", "median_ci_lo": "median: 95% from",
                 "median_ci_hi": "median: 95% to", "mean": "mean", "sd": "sd", "cv": "CV",
                 "min": "min", "max": "max", "outliers": "outliers"}
_PAIR_COLS = {"metric": "metric", "baseline": "A", "other": "B", "test": "test", "p": "p",
              "p_holm": "p (Holm)", "ratio": "B ÷ A", "ratio_ci_lo": "95% from",
              "ratio_ci_hi": "95% to", "delta": "effect size", "magnitude": "magnitude",
              "verdict": "verdict", "note": "note", "key": "key"}


def render_html(loaded: Loaded, out: Path, results_root: Path,
                priorities: list[str] | None = None) -> None:
    """Write the report; `priorities` (built-in names or TOML files) choose the
    recommendation shown (none: the built-in profile this run measured the most of)."""
    env = Environment(loader=PackageLoader("fslab.report", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["num"] = fmt_float
    a = loaded.analysis
    entries = headline(a, loaded.records, loaded.environments.values())
    page = env.get_template("report.html.j2").render(
        title="fslab report — " + ", ".join(r["run_id"] for r in loaded.runs),
        generated=time.strftime("%Y-%m-%d %H:%M:%S"),
        runs=[_run_view(r) for r in loaded.runs],
        factor=" + ".join(a.factor), levels=a.levels,
        answer=headline_text(entries), legend=LEGEND,
        decides=[_decide_view(d) for d in stored_decisions(loaded.runs)],
        decisions=_sections(decision.figures(entries, _final_stage(loaded.runs))),
        decision_caption=decision.CAPTION,
        measured_as=measured_as(loaded.environments, loaded.records),
        # what the answer's 'said below' points at (each suite's I/O, a database beside RAM):
        # in the page, not only in the folded environment JSON
        cache_lines=list(dict.fromkeys(line for e in loaded.environments.values()
                                       for line in describe_run(e))),
        memory_unchecked=memory_unchecked_text(memory_checks(loaded.records), loaded.records),
        failed_units=loaded.failed_units,
        adaptive=[{**v, "table": _table(pd.DataFrame(v["cases"]))}
                  for v in filter(None, map(adaptive_rounds, loaded.runs))],
        lead=_sections(lead_sections(FigureContext(a, "*", a.summary, a.data, results_root,
                                                   priorities=priorities))),
        verdicts=_table(_readable_verdicts(a)), notes=footnotes(a),
        claims=html_rows(claims_json(loaded.runs[0] if loaded.runs else None, loaded.records)),
        measured=measured_where(loaded.environments),
        options=html_table(loaded.runs),
        suites=_suites(loaded, results_root),
        cdf_caption=latency_cdf.CAPTION, over_time_caption=over_time.CAPTION,
        omnibus=_table(_labelled(assumption_checks(a), a)), min_n_to_check=MIN_N_TO_CHECK,
        regression=_table(_metric_named(a.regression)),
        iterations=_iterations(a),
        reproduce=_reproduce(loaded, results_root, out.parent),
        artifacts=_artifacts(loaded, results_root, out.parent),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page)


def _final_stage(runs: list[dict]) -> set[str] | None:
    """A staged decide's last-stage candidates: the decision figures show those alone (not
    35 candidates of two stages, on different rounds, under one 'ratio to the best')."""
    finals = {r.label for d in stored_decisions(runs) if len(d.stages) > 1
              for r in d.candidates}
    return finals or None


def _decide_view(dec: Decision) -> dict:
    """A decide's decision, as the terminal says it: the verdict and what it took, the
    candidates' ratios to the leader drawn with their intervals, the table, what to type."""
    leader = dec.leader
    # "winner" only where the race found one: a tie or an undecided race has a leader
    to = "winner" if dec.winner else "leader"
    amp = any(r.write_amplification is not None for r in dec.candidates)
    rows, dots = [], []
    for r in dec.candidates:
        c = cells(r, leader)
        row = {"candidate": r.label, "options": r.options or "defaults",
               f"ratio to {to} (95% CI)": c.ratio, "P(best)": c.p_best,
               "expected loss": c.expected_loss}
        if amp:
            row["write ampl."] = c.write_amplification
        rows.append({**row, "status": c.status})
        if r.ratio is not None:
            lo, hi = r.ratio_ci if r.label != leader else (None, None)
            gone = r.eliminated_round is not None
            dots.append({"label": r.label, "value": r.ratio, "lo": lo, "hi": hi,
                         "color": "#5b6b7a" if gone else "#176b2c",
                         "note": f"P(best) {c.p_best}" + (
                             f" · eliminated r{r.eliminated_round}" if gone else
                             f" · retired r{r.retired_round}" if r.retired_round else
                             " · winner" if r.label == dec.winner else
                             " · leader" if r.label == leader else "")})
    arrow = "higher is better" if dec.better == "higher" else "lower is better"
    ends = [float(x) for r in dec.candidates if r.ratio is not None
            for x in (r.ratio, *(r.ratio_ci if r.label != leader else ())) if x]
    # intervals over more than a factor of 10 (a few rounds of a noisy unit) on a linear
    # axis squeeze every dot against 0: ratios on a log axis then
    wide = bool(ends) and max(ends) / min(ends) > 10
    chart = dot_interval(dots, f"{dec.metric} ({arrow}): ratio to {leader}",
                         f"ratio to the {to} (×)", log=wide, reference=1.0, width=760,
                         tick_format=lambda v: f"{v:g}×") if leader and len(dots) > 1 else ""
    head, commands, after = _decide_parts(dec)
    return {"run": dec.run, "head": head, "commands": commands, "lines": after,
            "chart": Markup(chart), "table": _table(pd.DataFrame(rows))}


def _decide_parts(dec: Decision) -> tuple[str, list[str], list[str]]:
    """The decision's own lines (decide's text builders), ordered for a reader: the
    decision line, what to type (with its own heading line), then everything else, which
    the page folds: each stage's line and why, the rounds it took, what was traded, what
    did not race."""
    decided = verdict_line(dec)
    story = [x.strip() for x in narrative(dec) if x.strip() != decided.strip()]
    rest, commands = [], []
    lines = tail(dec)
    i = 0
    while i < len(lines):
        if dec.commands and lines[i].startswith(("to apply it", "best guess")):
            commands = [lines[i].strip()] + [c.strip() for c in lines[i + 1:i + 1 + len(dec.commands)]]
            i += 1 + len(dec.commands)
            continue
        rest.append(lines[i].strip())
        i += 1
    return decided, commands, story + rest


def _table(df: pd.DataFrame) -> dict | None:
    return {"columns": list(df.columns), "rows": df.to_dict("records")} if not df.empty else None


def _labelled(df: pd.DataFrame, a: Analysis) -> pd.DataFrame:
    if df.empty:
        return df
    show_host = "host" in a.keys and a.data["host"].nunique() > 1
    labels = [workload_label(r, show_host) for r in df.to_dict("records")]
    drop = [c for c in ("run_id", "host", "suite", "case", "params") if c in df.columns]
    return _metric_named(df.drop(columns=drop).assign(workload=labels)[
        ["workload"] + [c for c in df.columns if c not in drop]])


def _metric_named(df: pd.DataFrame) -> pd.DataFrame:
    """A table's metric column as a person says it, the stored key in a column beside it."""
    if df.empty or "metric" not in df.columns:
        return df
    at = list(df.columns).index("metric") + 1
    out = df.assign(metric=df["metric"].map(metric_label))
    out.insert(at, "key", df["metric"])
    return out


def _readable_verdicts(a: Analysis) -> pd.DataFrame:
    """The flat verdict table (every metric of every workload, ranked or not), kept as a
    reference appendix: the verdicts themselves are said once per workload above it."""
    t = verdict_table(a)
    return t.rename(columns={"metric_key": "key"})


def _run_view(run: dict) -> dict:
    fmt = lambda t: time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "–"
    return {**run, "started_text": fmt(run.get("started")), "finished_text": fmt(run.get("finished")),
            "environment_text": orjson.dumps(RunEnvironment.of_run(run).as_dict(),
                                             option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()}


def _sections(found: list[Section]) -> list[dict]:
    return [{"title": x.title, "html": Markup(x.html), "caption": x.caption} for x in found]


def _suites(loaded: Loaded, results_root: Path | None = None) -> list[dict]:
    a = loaded.analysis
    where = [k for k in a.keys if k not in ("metric", "unit")]
    tiers = _tier_groups(a, where)
    pairs = pairs_table(a)
    show_host = "host" in a.keys and a.data["host"].nunique() > 1
    out = []
    for suite in sorted(a.summary["suite"].unique()):
        summary = a.summary[a.summary["suite"] == suite]
        data = a.data[a.data["suite"] == suite]
        workloads = []
        # the panels read only these columns: splitting a slim frame is far cheaper
        panel_cols = list(dict.fromkeys([*where, "metric", "unit", "level", "value", "outlier",
                                         "iteration"]))
        data_groups = dict(list(data[panel_cols].groupby(where, sort=True, dropna=False)))
        # the figures from raw artifacts (CDFs, logs) read the rows that point at them
        unit_cols = list(dict.fromkeys([*where, "metric", "level", "iteration", "params", "artifact"]))
        units = data[data["metric"].isin(RAW_ANCHORS)] if "artifact" in data.columns else data.iloc[0:0]
        unit_groups = dict(list(units[[c for c in unit_cols if c in data.columns]]
                                .groupby(where, sort=True, dropna=False)))
        for key, s in summary.groupby(where, sort=True, dropna=False):
            d = data_groups[key]
            u = unit_groups.get(key, units.iloc[0:0])
            ident = dict(zip(where, key if isinstance(key, tuple) else (key,)))
            label = workload_label(ident, show_host)
            p = pairs[pairs["workload"] == workload_label(ident)] if not pairs.empty else pairs
            main = _main_metrics(a, s, ident)
            more = [m for m in described_metrics(a, s) if m not in main]
            workloads.append({
                "label": label,
                "verdicts": _verdict_lines(tiers.get(key, []), [m for m, _ in main]),
                "ranked": _table(_level_table(a, s, main)),
                "panels": Markup(medians_and_points(a, s, d, main) or ""),
                "cdf": Markup(latency_cdf.figure(u, a.levels, results_root) or ""),
                "over_time": Markup(over_time.figure(u, a.levels, results_root) or ""),
                "described": _table(_level_table(a, s, more)),
                "described_panels": Markup(medians_and_points(a, s, d, more) or ""),
                "qq": Markup(residual_qq(a, s, d) or ""),
                "summary": _table(_metric_rows(s)),
                "pairs": _table(_named(p)[list(_PAIR_COLS)].rename(columns=_PAIR_COLS))
                if not p.empty else None,
                "outliers": _outliers(d),
            })
        extra = sections_for(FigureContext(a, suite, summary, data, results_root))
        out.append({"name": suite, "workloads": workloads,
                    "sections": [{"title": x.title, "html": Markup(x.html), "caption": x.caption}
                                 for x in extra]})
    return out


def _tier_groups(a: Analysis, where: list[str]) -> dict[tuple, list[dict]]:
    """The ranked groups (fslab.analysis.tiers rows) of each workload."""
    if a.tiers.empty:
        return {}
    return {(k if isinstance(k, tuple) else (k,)): g.to_dict("records")
            for k, g in sharpen(a).groupby(where, sort=True, dropna=False)}


def _main_metrics(a: Analysis, s: pd.DataFrame, ident: dict) -> list[tuple[str, str]]:
    """The metrics a workload is ranked on, its answer's first, then the other ranked
    headline metrics (not a distribution's tails; fio's total latency `lat` repeats
    `clat` plus a submission time of nanoseconds, so it joins the details)."""
    ranked = s[s["better"].isin(["higher", "lower"])]
    pairs = list(dict.fromkeys(zip(ranked["metric"], ranked["unit"])))
    answer = answer_metrics(ident.get("suite"), str(ident.get("case", "")), ident.get("params"),
                            {m for m, _ in pairs})
    first = [p for m in answer for p in pairs if p[0] == m]
    rest = [p for p in pairs if p not in first and not is_detail(p[0])
            and "_lat_" not in p[0].replace("sync_lat_", "")]
    return (first + rest)[:12]


def _verdict_lines(groups: list[dict], order: list[str]) -> list[dict]:
    """Each verdict once: ranked metrics whose rankings read the same (IOPS and bandwidth
    of one job) share one line; lines follow `order` (the answer's metrics first)."""
    rank = {m: i for i, m in enumerate(order)}
    lines: dict[str, dict] = {}
    for t in sorted(groups, key=lambda t: (rank.get(t["metric"], len(rank)), t["metric"])):
        if t["metric"] not in rank:
            continue
        text = ranking_text(t)
        arrow = "↑" if t["better"] == "higher" else "↓"
        line = lines.setdefault(arrow + text, {"metrics": [], "text": text, "arrow": arrow})
        line["metrics"].append(metric_label(t["metric"], t.get("suite")))
    return [{**v, "metrics": ", ".join(v["metrics"])} for v in lines.values()]


def _level_table(a: Analysis, s: pd.DataFrame, metrics: list[tuple[str, str]]) -> pd.DataFrame:
    """One row per metric: each filesystem's median with the order-statistic 95% interval
    the verdict table prints (where n allows one)."""
    if not metrics:
        return pd.DataFrame()
    slim = s[s["metric"].isin([m for m, _ in metrics])][
        ["metric", "unit", "level", "better", "median", "median_ci_lo", "median_ci_hi", "n"]]
    by: dict[tuple[str, str], list[Any]] = {}
    for r in slim.itertuples(index=False):
        by.setdefault((r.metric, r.unit), []).append(r)
    rows = []
    for metric, unit in metrics:
        g = by.get((metric, unit), [])
        better = g[0].better if g else None
        row: dict[str, Any] = {"metric": heading(metric_label(metric), unit),
                               "": {"higher": "↑", "lower": "↓"}.get(str(better), "not ranked")}
        for lv in g:
            lo, hi = lv.median_ci_lo, lv.median_ci_hi
            row[lv.level] = (human_spread(lv.median, lo, hi, unit)
                             if pd.notna(lo) and pd.notna(hi) else human(lv.median, unit))
        row["n"] = min(int(lv.n) for lv in g) if g else 0
        row["key"] = metric
        rows.append(row)
    cols = ["metric", "", *a.levels, "n", "key"]
    return pd.DataFrame(rows, columns=cols).dropna(axis=1, how="all").fillna("–") if rows else pd.DataFrame()


def _outliers(d: pd.DataFrame) -> dict | None:
    """The values flagged as outliers in this workload, listed where they are counted."""
    o = d[d["outlier"].astype(bool)]
    if o.empty:
        return None
    rows = [{"metric": metric_label(r["metric"]), "filesystem": r["level"],
             "round": r.get("iteration", ""), "value": human(r["value"], r["unit"]), "key": r["metric"]}
            for r in o.sort_values(["metric", "level"]).to_dict("records")]
    return _table(pd.DataFrame(rows))


def _named(df: pd.DataFrame) -> pd.DataFrame:
    """The metric as a person says it, with the stored key beside it (to filter or re-run by)."""
    return df.assign(key=df["metric"], metric=df["metric"].map(metric_label))


def _metric_rows(s: pd.DataFrame) -> pd.DataFrame:
    rows = _named(s)[["metric", "unit", "better", *_SUMMARY_COLS, "key"]].copy()
    rows.insert(3, "median (readable)", [human(m, u) for m, u in zip(rows["median"], rows["unit"])])
    rows["better"] = rows["better"].map({"higher": "↑ higher", "lower": "↓ lower"}).fillna("not ranked")
    return rows.rename(columns={**_SUMMARY_COLS, "better": "ranked"})


def _iterations(a: Analysis) -> dict | None:
    wide = a.per_iteration()
    if len(wide) > MAX_ITERATION_ROWS:
        return {"too_many": len(wide)}
    return _table(wide.rename(columns=_column_labels(wide.columns)))


def _column_labels(columns: Iterable[str]) -> dict[str, str]:
    """'read_iops [ops/s]' -> 'read IOPS [ops/s]' (the key where two labels would clash)."""
    out: dict[str, str] = {}
    used: dict[str, list[str]] = {}
    for c in columns:
        key, sep, unit = str(c).partition(" [")
        if not sep:
            continue
        label = f"{metric_label(key)} [{unit}"
        used.setdefault(label, []).append(c)
        out[c] = label
    for label, cs in used.items():
        if len(cs) > 1:    # fio's total latency (lat) reads as its completion latency (clat)
            for c in cs:
                if re.match(r"(read|write|trim)_lat_", str(c)):
                    out[c] = label.replace(" [", " (submission + completion) [")
        if len({out[c] for c in cs}) < len(cs):
            for c in cs:
                out[c] = str(c)
    return out


def _rel(path: Path, start: Path) -> str:
    return os.path.relpath(path, start)


def _reproduce(loaded: Loaded, root: Path, html_dir: Path) -> list[dict]:
    """The command of each run and its distinct fio job files (the ones fio really ran)."""
    out = []
    for run in loaded.runs:
        jobs, seen = [], set()
        for job in sorted((root / "runs" / run["run_id"]).rglob("*.fio"))[:200]:
            text = job.read_text(errors="replace")
            if text not in seen:
                seen.add(text)
                jobs.append({"path": _rel(job, html_dir), "text": text})
        out.append({"run_id": run["run_id"], "command": run.get("command") or "",
                    "plan": run.get("plan") or "", "job_files": jobs})
    return out


def _artifacts(loaded: Loaded, root: Path, html_dir: Path) -> dict:
    paths = sorted(loaded.records["artifact"].dropna().unique())
    return {"total": len(paths),
            "links": [{"name": p, "href": _rel(root / p, html_dir)} for p in paths[:MAX_ARTIFACT_LINKS]]}
