"""Helpers shared by the study figures (S0, S1, S3): medians by level, params, HTML tables."""
from __future__ import annotations

import orjson
import pandas as pd
from markupsafe import escape

from fslab.metrics.format import human


def with_params(df: pd.DataFrame) -> pd.DataFrame:
    """The rows plus one column per key of their JSON params ('bs', 'numjobs', ...)."""
    codes, texts = pd.factorize(df["params"])      # a handful of distinct params: parse each once
    parsed = pd.DataFrame([orjson.loads(p) for p in texts]).reindex(codes)
    parsed.index = df.index
    return df.join(parsed.drop(columns=[c for c in parsed.columns if c in df.columns]))


def medians(summary: pd.DataFrame, metrics: list[str], by: list[str],
            of: str = "median") -> pd.DataFrame:
    """Median (or `of`: mean) over iterations of each metric, one row per `by` group, one
    column per metric."""
    s = summary[summary["metric"].isin(metrics)]
    return s.pivot_table(index=by, columns="metric", values=of, aggfunc="first",
                         observed=True)


def cell(value: float | None, unit: str) -> str:
    if value is None or pd.isna(value):
        return "–"
    return f"{float(value):.2f}×" if unit == "ratio" else human(float(value), unit)


def level_table(summary: pd.DataFrame, levels: list[str],
                columns: list[tuple[str, str]]) -> tuple[list[dict], list[str]]:
    """One row per filesystem level, one column per (metric, label): medians over iterations."""
    m = medians(summary, [metric for metric, _ in columns], ["level"])
    units = summary.drop_duplicates("metric").set_index("metric")["unit"]
    rows = []
    for lv in levels:
        if lv not in m.index:
            continue
        rows.append({"filesystem": lv, **{label: cell(m.loc[lv].get(metric), units.get(metric, ""))
                                          for metric, label in columns}})
    return rows, ["filesystem", *(label for _, label in columns)]


def html_table(rows: list[dict], columns: list[str], css: str) -> str:
    """An HTML table of already formatted cells; every text escaped."""
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(r.get(c, '')))}</td>" for c in columns)
                   + "</tr>" for r in rows)
    return f'<table class="{escape(css)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
