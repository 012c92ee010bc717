"""Markdown, CSV, Parquet and JSON outputs of one analysis."""
from __future__ import annotations

from fslab import schema
from fslab.analysis import Analysis

from pathlib import Path

import pandas as pd

from fslab.report.sharpness import sharpen
from fslab.report.verdicts import LEGEND, ranking_line, tier_rows
from fslab.results.load import Loaded
from fslab.store.environment import RunEnvironment
from fslab.metrics.format import cell as fmt_float
from fslab.report.tables import (adaptive_rounds, assumption_checks, footnotes, memory_checks,
                                 memory_unchecked_text, pairs_table, verdict_table,
                                 workload_label)
from fslab.report.claims import claims_json, markdown as claims_markdown
from fslab.report.headline import headline, memory_bound, memory_applies, memory_text, headline_text
from fslab.metrics import label as metric_label
from fslab.results.provenance import measured_where
from fslab.report.options import markdown as options_markdown
from fslab.decide.decision import text
from fslab.decide.result import stored_decisions as decisions


def tables(loaded: Loaded) -> dict[str, pd.DataFrame]:
    """Every table of the report, by file name stem."""
    a = loaded.analysis
    return {"verdicts": verdict_table(a, headline=False), "summary": a.summary,
            "pairs": pairs_table(a), "tiers": tier_rows(a.tiers, a.keys),
            "omnibus": assumption_checks(a, too_few=None),
            "regression": a.regression, "per_iteration": a.per_iteration()}


def write_csv(loaded: Loaded, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for name, df in tables(loaded).items():
        path = directory / f"{name}.csv"
        df.to_csv(path, index=False)
        out.append(path)
    return out


def write_parquet(loaded: Loaded, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    loaded.records.to_parquet(path, index=False)


def write_json(loaded: Loaded, path: Path) -> None:
    """The run, its records, and the lanes' keys ("claims": fslab/report/claims/)."""
    import json
    path.parent.mkdir(parents=True, exist_ok=True)
    run = loaded.runs[0] if loaded.runs else None
    env = loaded.environments[run["run_id"]] if run else RunEnvironment()
    a = loaded.analysis
    entries = headline(a, loaded.records, loaded.environments.values())
    checks = memory_checks(loaded.records)
    by_label = {workload_label({"suite": s, "case": c, "params": p}): chk
                for (s, c, p), chk in checks.items()}
    for e in entries:
        e["memory_checked"] = _checked(by_label.get(e["workload"]))
    doc = {"run": run["run_id"] if run else None,
           "page_cache": env.page_cache,
           "verdicts": verdicts_json(a, memory_bound(loaded.records), checks),
           # the rankings themselves are in "verdicts": the headline says which ones answer
           "headline": [{k: v for k, v in e.items() if k != "rankings"} for e in entries],
           "memory_check": memory_unchecked_text(checks, loaded.records),
           "failed_units": loaded.failed_units,
           "adaptive": env.adaptive,
           "claims": claims_json(run, loaded.records),
           # each as it was stored (a decision of an older fslab in its own version's JSON)
           "decisions": [d.to_json(d.stored_version) for d in decisions(loaded.runs)],
           "records": json.loads(loaded.records.to_json(orient="records"))}
    path.write_text(json.dumps(schema.stamp("report", doc), indent=1, default=_plain))


def _plain(x: object) -> object:
    """numpy scalars and NaN-free floats for JSON."""
    import numpy as np
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(type(x))


def _checked(check: dict | None) -> bool | None:
    """Whether device counters could tell memory from the device (None: no data moved)."""
    return None if check is None else not check["unchecked"]


def verdicts_json(a: Analysis, memory: dict, checks: dict | None = None) -> list[dict]:
    """One entry per ranked (workload, metric): how it is shown (tiers, letters or one
    group), the levels best first with median, ratio to the best and its interval (with
    that interval's confidence), tier or letters, and every pair with its test (raw
    values, no formatting); "memory_checked" false where a filesystem's units had no
    device counters (`checks`: tables.memory_checks)."""
    import math

    def num(x: float | None) -> float | None:
        return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)

    out = []
    for r in ([] if a.tiers.empty else sharpen(a).to_dict("records")):
        mem = memory.get((r.get("suite"), r.get("case"), r.get("params"))) \
            if memory_applies(r["unit"]) else None
        out.append({"workload": workload_label({**r, "metric": "", "unit": ""}),
                    "suite": r.get("suite"), "case": r.get("case"), "params": r.get("params"),
                    "metric": r["metric"], "label": metric_label(r["metric"], r.get("suite")), "unit": r["unit"],
                    "better": r["better"], "display": r["display"], "order": r["order"],
                    "tiers": r["tiers"], "letters": r["letters"] or None,
                    "levels": {lv: {"median": num(i["median"]), "estimate": num(i["estimate"]),
                                    "ratio_to_best": num(i["ratio_to_best"]),
                                    "ratio_ci": [num(i["ratio_ci"][0]), num(i["ratio_ci"][1])],
                                    "ratio_ci_level": num(i["ratio_ci_level"]),
                                    "tier": i["tier"], "letters": i["letters"] or None,
                                    "n": i["n"]}
                               for lv, i in r["levels_info"].items()},
                    "pairs": [{**p, "p": num(p["p"]), "p_holm": num(p["p_holm"]),
                               "ratio": num(p["ratio"]),
                               "ratio_ci": [num(p["ratio_ci"][0]), num(p["ratio_ci"][1])],
                               "ratio_ci_level": num(p["ratio_ci_level"])} for p in r["pairs"]],
                    "test": r["test"], "n": int(r["n"]), "line": ranking_line(r),
                    # the smallest difference its tests separate at 80% power (a fraction)
                    "mde": num(r.get("mde")),
                    "note": r["why"] or None,
                    "memory_bound": ({"shares": mem, "why": memory_text(mem)} if mem else None),
                    "memory_checked": _checked((checks or {}).get(
                        (r.get("suite"), r.get("case"), r.get("params"))))})
    return out


def markdown(loaded: Loaded) -> str:
    a = loaded.analysis
    runs = ", ".join(f"`{r['run_id']}` ({r['status']}, {r.get('profile') or r.get('source') or ''})"
                     for r in loaded.runs)
    lines = ["# fslab report", "", f"Runs: {runs}. Compared across **{' + '.join(a.factor)}**: "
             + ", ".join(a.levels) + ".", ""]
    lines += [f"> **{n}**\n" for n in measured_where(loaded.environments)]
    lines += options_markdown(loaded.runs)
    answer = headline_text(headline(a, loaded.records, loaded.environments.values()))
    if answer:
        for dec in decisions(loaded.runs):
            lines += [f"## Decision (fslab decide, run {dec.run})", "", "```"] + text(dec) + ["```", ""]
        lines += ["## Answer", "", f"Best first per workload; {LEGEND}.", ""] + \
                 [f"- {x}" for x in answer] + [""]
    unchecked = memory_unchecked_text(memory_checks(loaded.records), loaded.records)
    if unchecked:
        lines += [f"**{unchecked[0].upper()}{unchecked[1:]}.**", ""]
    if loaded.failed_units:
        lines += ["Failed units, left out of every verdict:", ""] + \
                 [f"- {f}" for f in loaded.failed_units] + [""]
    lines += ["## Verdicts", "", md_table(verdict_table(a).drop(columns="metric_key")), ""]
    lines += [f"- {n}" for n in footnotes(a)]
    for view in filter(None, map(adaptive_rounds, loaded.runs)):
        lines += ["", "## Adaptive rounds" + (f" (run `{view['run_id']}`)" if len(loaded.runs) > 1
                                               else ""), "", view["summary"][0].upper()
                  + view["summary"][1:] + ".", "", md_table(pd.DataFrame(view["cases"]))]
        lines += ["", f"Caveat: {view['caveat']}."] if view["caveat"] else []
    lines += ["", *claims_markdown(claims_json(loaded.runs[0] if loaded.runs else None,
                                               loaded.records))]
    if not a.omnibus.empty:
        omni = assumption_checks(a)     # no Shapiro-Wilk or Levene p at n < 5
        cols = [c for c in ("suite", "case", "metric", "kw_p", "anova_p", "shapiro_p", "levene_p",
                            "assumptions") if c in omni.columns]
        ranked = omni[omni["better"].notna()] if "better" in omni else omni
        lines += ["", "## Assumption checks", "", md_table(ranked[cols])]
    return "\n".join(lines) + "\n"


def md_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "_nothing to show_"
    cell = lambda v: fmt_float(v).replace("|", "\\|").replace("\n", " ")
    head = "| " + " | ".join(cell(c) for c in df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *body])
