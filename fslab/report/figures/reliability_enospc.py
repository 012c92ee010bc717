"""enospc: the full-disk table, one row per filesystem and fill.

Usable space right after mkfs, what the fill got written and how it ended (the call
that failed and its errno), which everyday operations still worked when full, how much
space deleting gave back, and whether earlier files and the checker were fine after.
Values are medians over iterations; outcomes are "k/n" iterations.
"""
from __future__ import annotations

import errno

import pandas as pd
from markupsafe import escape

from fslab.report.figures import FigureContext, Section

SUITES = ("enospc",)
OPS = ("create", "mkdir", "append", "overwrite", "rename", "rm")


def _mib(v: float) -> str:
    return f"{v / 2**20:.0f} MiB"


def _share(v: pd.Series) -> str:
    return f"{int((v > 0.5).sum())}/{len(v)}"


def table(data: pd.DataFrame) -> list[dict]:
    rows = []
    for (level, case), g in data.groupby(["level", "case"], sort=False):
        med = g.groupby("metric")["value"].median()
        by = {m: s["value"] for m, s in g.groupby("metric")}
        row = {"filesystem": level, "fill": case}
        row["usable"] = (f"{_mib(med['usable_bytes'])} ({med['usable_fraction']:.0%} of "
                         f"{_mib(med['image_bytes'])})") if "usable_bytes" in med else ""
        row["written at failure"] = (f"{_mib(med.get('filled_bytes', 0))}, "
                                     f"{int(med.get('filled_files', 0))} files")
        e = g[g["metric"] == "fill_errno"]
        if len(e):
            calls = sorted(m.removeprefix("fill_failed_at_") for m in by if m.startswith("fill_failed_at_"))
            codes = sorted({errno.errorcode.get(int(v), str(int(v))) for v in e["value"]})
            row["failed call"] = f"{'/'.join(calls)}: {'/'.join(codes)}"
        else:
            row["failed call"] = "no error (a safety cap stopped the fill)"
        works = []
        for op in OPS:
            ok = by.get(f"when_full_{op}_ok")
            if ok is None:
                continue
            bad = g[g["metric"] == f"when_full_{op}_errno"]["value"]
            code = f" {errno.errorcode.get(int(bad.iloc[0]), '')}" if len(bad) else ""
            works.append(f"{op} {_share(ok)}{code if (ok < 0.5).any() else ''}")
        row["when full: worked"] = ", ".join(works)
        if "reclaimed_fraction" in med:
            row["freed after rm"] = f"{med['reclaimed_fraction']:.0%} of usable"
        for m, label in (("precious_intact", "earlier files intact"), ("checker_clean", "checker clean")):
            if m in by:
                row[label] = _share(by[m])
        rows.append(row)
    return rows


def sections(ctx: FigureContext) -> list[Section]:
    rows = table(ctx.data)
    if not rows:
        return []
    cols = list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(r.get(c, '')))}</td>" for c in cols) + "</tr>"
                   for r in rows)
    return [Section("Full disk: limits, errors and recovery",
                    f'<table class="enospc"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>',
                    "Runs as root, so ext4's root-reserved blocks are usable. 'k/n' = rounds "
                    "where it held. Details per unit in enospc.json.")]
