"""The self-contained offline HTML report (Jinja2, inline SVG, no scripts, no network).

Jinja autoescapes every value; only SVG made by matplotlib or fslab/report/svgplot.py
(both escape their own text) and sections from fslab/report/figures are inserted as markup.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from fslab.metrics import label as metric_label
from fslab.analysis.omnibus import MIN_N_TO_CHECK
from fslab.report.figures import FigureContext, lead_sections, sections_for
from fslab.report.format import human
from fslab.report.load import Loaded
from fslab.report.plots import bars_and_points, residual_qq
from fslab.report.headline import headline, headline_text
from fslab.report.verdicts import LEGEND
from fslab.report.provenance import measured_as, measured_where
from fslab.report.options import html_table
from fslab.report.claims import claims_json, html_rows
from fslab.report.format import cell as fmt_float
from fslab.report.tables import (adaptive_rounds, assumption_checks, footnotes, memory_checks,
                                 memory_unchecked_text, pairs_table, verdict_table,
                                 workload_label)

MAX_ITERATION_ROWS = 2000    # the per-iteration table beyond this lives in the CSV only
MAX_ARTIFACT_LINKS = 500
_SUMMARY_COLS = ["level", "n", "mean", "median", "sd", "cv", "min", "max", "mean_ci_lo",
                 "mean_ci_hi", "median_ci_lo", "median_ci_hi", "outliers"]


def render_html(loaded: Loaded, out: Path, results_root: Path) -> None:
    env = Environment(loader=PackageLoader("fslab.report", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["num"] = fmt_float
    a = loaded.analysis
    page = env.get_template("report.html.j2").render(
        title="fslab report — " + ", ".join(r["run_id"] for r in loaded.runs),
        generated=time.strftime("%Y-%m-%d %H:%M:%S"),
        runs=[_run_view(r) for r in loaded.runs],
        factor=" + ".join(a.factor), levels=a.levels,
        answer=headline_text(headline(a, loaded.records)), legend=LEGEND,
        measured_as=measured_as(loaded.runs, loaded.records),
        memory_unchecked=memory_unchecked_text(memory_checks(loaded.records), loaded.records),
        failed_units=loaded.failed_units,
        adaptive=[{**v, "table": _table(pd.DataFrame(v["cases"]))}
                  for v in filter(None, map(adaptive_rounds, loaded.runs))],
        lead=_sections(lead_sections(FigureContext(a, "*", a.summary, a.data, results_root))),
        verdicts=_table(verdict_table(a).drop(columns="metric_key")), notes=footnotes(a),
        claims=html_rows(claims_json(loaded.runs[0] if loaded.runs else None, loaded.records)),
        measured=measured_where(loaded.runs),
        options=html_table(loaded.runs),
        suites=_suites(loaded, results_root),
        omnibus=_table(_labelled(assumption_checks(a), a)), min_n_to_check=MIN_N_TO_CHECK,
        regression=_table(a.regression),
        iterations=_iterations(a),
        reproduce=_reproduce(loaded, results_root, out.parent),
        artifacts=_artifacts(loaded, results_root, out.parent),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page)


def _table(df: pd.DataFrame) -> dict:
    return {"columns": list(df.columns), "rows": df.to_dict("records")} if not df.empty else None


def _labelled(df: pd.DataFrame, a) -> pd.DataFrame:
    if df.empty:
        return df
    show_host = "host" in a.keys and a.data["host"].nunique() > 1
    labels = [workload_label(r, show_host) for r in df.to_dict("records")]
    drop = [c for c in ("run_id", "host", "suite", "case", "params") if c in df.columns]
    return df.drop(columns=drop).assign(workload=labels)[
        ["workload"] + [c for c in df.columns if c not in drop]]


def _run_view(run: dict) -> dict:
    fmt = lambda t: time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "–"
    return {**run, "started_text": fmt(run.get("started")), "finished_text": fmt(run.get("finished")),
            "environment_text": orjson.dumps(run.get("environment") or {},
                                             option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()}


def _sections(found) -> list[dict]:
    return [{"title": x.title, "html": Markup(x.html), "caption": x.caption} for x in found]


def _suites(loaded: Loaded, results_root: Path | None = None) -> list[dict]:
    a = loaded.analysis
    where = [k for k in a.keys if k not in ("metric", "unit")]
    out = []
    for suite in sorted(a.summary["suite"].unique()):
        summary = a.summary[a.summary["suite"] == suite]
        data = a.data[a.data["suite"] == suite]
        workloads = []
        # the generic panels read only these columns: splitting a slim frame is far cheaper
        panel_cols = list(dict.fromkeys([*where, "metric", "unit", "level", "value", "outlier"]))
        data_groups = dict(list(data[panel_cols].groupby(where, sort=True, dropna=False)))
        pairs = pairs_table(a)
        show_host = "host" in a.keys and a.data["host"].nunique() > 1
        for key, s in summary.groupby(where, sort=True, dropna=False):
            d = data_groups[key]
            label = workload_label(dict(zip(where, key)), show_host)
            p = pairs[pairs["workload"] == label] if not pairs.empty else pairs
            workloads.append({
                "label": label,
                "bars": Markup(bars_and_points(a, s, d) or ""),
                "qq": Markup(residual_qq(a, s, d) or ""),
                "summary": _table(_metric_rows(s)),
                "pairs": _table(_named(p)[["metric", "key", "baseline", "other", "test", "p", "p_holm",
                                           "delta", "magnitude", "ratio", "ratio_ci_lo", "ratio_ci_hi",
                                           "verdict", "note"]]) if not p.empty else None,
            })
        extra = sections_for(FigureContext(a, suite, summary, data, results_root))
        out.append({"name": suite, "workloads": workloads,
                    "sections": [{"title": x.title, "html": Markup(x.html), "caption": x.caption}
                                 for x in extra]})
    return out


def _named(df: pd.DataFrame) -> pd.DataFrame:
    """The metric as a person says it, with the stored key beside it (to filter or re-run by)."""
    return df.assign(key=df["metric"], metric=df["metric"].map(metric_label))


def _metric_rows(s: pd.DataFrame) -> pd.DataFrame:
    rows = _named(s)[["metric", "key", "unit", "better", *_SUMMARY_COLS]].copy()
    rows["median (readable)"] = [human(m, u) for m, u in zip(rows["median"], rows["unit"])]
    rows["better"] = rows["better"].fillna("not ranked")
    return rows


def _iterations(a) -> dict | None:
    wide = a.per_iteration()
    if len(wide) > MAX_ITERATION_ROWS:
        return {"too_many": len(wide)}
    return _table(wide)


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
