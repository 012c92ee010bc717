"""Markdown, CSV, Parquet and JSON outputs of one analysis."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from fslab.analysis.tiers import tier_rows
from fslab.report.load import Loaded
from fslab.report.format import cell as fmt_float
from fslab.report.tables import footnotes, pairs_table, verdict_table, workload_label


def tables(loaded: Loaded) -> dict[str, pd.DataFrame]:
    """Every table of the report, by file name stem."""
    a = loaded.analysis
    return {"verdicts": verdict_table(a, headline=False), "summary": a.summary,
            "pairs": pairs_table(a), "tiers": tier_rows(a.tiers, a.keys), "omnibus": a.omnibus,
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
    """The run, its records, and the lanes' keys ("claims": fslab/report/claims.py)."""
    import json
    from fslab.report.claims import claims_json
    path.parent.mkdir(parents=True, exist_ok=True)
    run = loaded.runs[0] if loaded.runs else None
    from fslab.report.headline import headline, memory_bound
    a = loaded.analysis
    entries = headline(a, loaded.records)
    doc = {"run": run["run_id"] if run else None,
           "page_cache": ((run or {}).get("environment") or {}).get("page_cache"),
           "verdicts": verdicts_json(a, memory_bound(loaded.records)),
           "headline": entries,
           "failed_units": loaded.failed_units,
           "claims": claims_json(run, loaded.records),
           "records": json.loads(loaded.records.to_json(orient="records"))}
    path.write_text(json.dumps(doc, indent=1, default=_plain))


def _plain(x):
    """numpy scalars and NaN-free floats for JSON."""
    import numpy as np
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(type(x))


def verdicts_json(a, memory: dict) -> list[dict]:
    """One entry per ranked (workload, metric): tiers best first, each level's median,
    ratio to the best with its bootstrap 95% CI and tier (raw values, no formatting)."""
    import math
    from fslab.analysis.names import metric_label
    from fslab.report.headline import memory_applies, memory_text

    def num(x):
        return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)

    out = []
    for r in ([] if a.tiers.empty else a.tiers.to_dict("records")):
        mem = memory.get((r.get("suite"), r.get("case"), r.get("params"))) \
            if memory_applies(r["unit"]) else None
        out.append({"workload": workload_label({**r, "metric": "", "unit": ""}),
                    "suite": r.get("suite"), "case": r.get("case"), "params": r.get("params"),
                    "metric": r["metric"], "label": metric_label(r["metric"]), "unit": r["unit"],
                    "better": r["better"], "tiers": r["tiers"],
                    "levels": {lv: {"median": num(i["median"]),
                                    "ratio_to_best": num(i["ratio_to_best"]),
                                    "ratio_ci": [num(i["ratio_ci"][0]), num(i["ratio_ci"][1])],
                                    "tier": i["tier"], "n": i["n"]}
                               for lv, i in r["levels_info"].items()},
                    "test": r["test"], "n": int(r["n"]), "line": r["line"],
                    "note": r["why"] or None,
                    "memory_bound": ({"shares": mem, "why": memory_text(mem)} if mem else None)})
    return out


def markdown(loaded: Loaded) -> str:
    a = loaded.analysis
    runs = ", ".join(f"`{r['run_id']}` ({r['status']}, {r.get('profile') or r.get('source') or ''})"
                     for r in loaded.runs)
    lines = ["# fslab report", "", f"Runs: {runs}. Compared across **{' + '.join(a.factor)}**: "
             + ", ".join(a.levels) + ".", ""]
    from fslab.report.provenance import measured_where   # which ZFS; guest: emulated
    lines += [f"> **{n}**\n" for n in measured_where(loaded.runs)]
    from fslab.report.headline import headline, headline_text
    answer = headline_text(headline(a, loaded.records))
    if answer:
        lines += ["## Answer", "", "Best first per workload; ≈ cannot be told apart, ≫ significantly "
                  "behind, (×) median ratio to the best.", ""] + [f"- {x}" for x in answer] + [""]
    if loaded.failed_units:
        lines += ["Failed units, left out of every verdict:", ""] + \
                 [f"- {f}" for f in loaded.failed_units] + [""]
    lines += ["## Verdicts", "", md_table(verdict_table(a).drop(columns="metric_key")), ""]
    lines += [f"- {n}" for n in footnotes(a)]
    from fslab.report.claims import claims_json, markdown as claims_markdown
    lines += ["", *claims_markdown(claims_json(loaded.runs[0] if loaded.runs else None,
                                               loaded.records))]
    if not a.omnibus.empty:
        cols = [c for c in ("suite", "case", "metric", "kw_p", "anova_p", "shapiro_p", "levene_p",
                            "assumptions") if c in a.omnibus.columns]
        ranked = a.omnibus[a.omnibus["better"].notna()] if "better" in a.omnibus else a.omnibus
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
