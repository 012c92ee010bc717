"""integrity: the matrix filesystem/variant x (data, metadata) -> detected / silent / healed.

Counts are summed over iterations, so "8 / 0 / 0 of 8" reads as: 8 damaged files, all
reported as errors. A cell with nothing damaged says why (e.g. ZFS compresses its
metadata, so the directory's names are not on the image to be flipped) instead of
showing zeros. What the filesystem itself said (scrub, checker) follows each cell.
"""
from __future__ import annotations

from pathlib import Path

import orjson
import pandas as pd
from markupsafe import escape

from fslab.report.figures import FigureContext, Section

SUITES = ("integrity",)
OUTCOMES = ("detected", "silent", "healed")
COLOUR = {"detected": "#2a7", "silent": "#c33", "healed": "#27c"}


def matrix(data: pd.DataFrame) -> pd.DataFrame:
    """One row per (level, case): damaged and outcome counts summed over iterations, plus
    how many iterations had a scrub / checker that came out clean."""
    wanted = ("damaged", *OUTCOMES, "healed_after_scrub", "collateral_damage")
    d = data[data["metric"].isin(wanted)]
    t = d.pivot_table(index=["level", "case"], columns="metric", values="value", aggfunc="sum",
                      fill_value=0)
    for flag in ("scrub_clean", "fsck_clean", "mount_ok"):
        f = data[data["metric"] == flag]
        if not f.empty:
            t[flag] = f.groupby(["level", "case"])["value"].agg(
                lambda v: f"{int((v > 0.5).sum())}/{len(v)}")
    return t.reset_index()


def why_not_damaged(data: pd.DataFrame, level: str, case: str, root: Path | None) -> str:
    """The unit's own words (integrity.json) for why nothing was damaged."""
    arts = data[(data["level"] == level) & (data["case"] == case)]["artifact"].dropna()
    for art in arts.unique() if root else ():
        try:
            return orjson.loads((root / art).read_bytes()).get("not_damaged") or ""
        except (OSError, ValueError):
            continue
    return "the damaged bytes were not found on the image"


def _cell(row: pd.Series, why: str) -> str:
    damaged = int(row.get("damaged", 0))
    if not damaged:
        return f"<td>not measured: {escape(why)}</td>"
    parts = [f'<span style="color:{COLOUR[o]}">{o} {int(row.get(o, 0))}</span>' for o in OUTCOMES]
    notes = []
    for key, label in (("mount_ok", "mounted"), ("scrub_clean", "scrub clean"),
                       ("fsck_clean", "checker clean")):
        if isinstance(row.get(key), str):
            notes.append(f"{label} {escape(row[key])}")
    if row.get("healed_after_scrub"):
        notes.append(f"correct after scrub {int(row['healed_after_scrub'])}")
    if row.get("collateral_damage"):
        notes.append(f"<b>undamaged files hurt {int(row['collateral_damage'])}</b>")
    return (f"<td>{' / '.join(parts)} <small>of {damaged}</small>"
            + (f"<br><small>{'; '.join(notes)}</small>" if notes else "") + "</td>")


def sections(ctx: FigureContext) -> list[Section]:
    t = matrix(ctx.data)
    if t.empty:
        return []
    cases = [c for c in ("data", "metadata") if c in set(t["case"])]
    rows = []
    for level in [lv for lv in ctx.analysis.levels if lv in set(t["level"])]:
        cells = []
        for case in cases:
            r = t[(t["level"] == level) & (t["case"] == case)]
            why = why_not_damaged(ctx.data, level, case, ctx.results_root) if len(r) else ""
            cells.append(_cell(r.iloc[0], why) if len(r) else "<td>not run</td>")
        rows.append(f"<tr><th>{escape(level)}</th>{''.join(cells)}</tr>")
    head = "".join(f"<th>{escape(c)} damage</th>" for c in cases)
    html = (f'<table class="integrity"><thead><tr><th>filesystem</th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")
    return [Section("Integrity matrix: what happens to flipped bytes", html,
                    "detected = the read failed (EIO, EUCLEAN, EBADMSG, or the mount refused); "
                    "silent = wrong data or a wrong listing returned without error; healed = "
                    "exactly the written data returned (another copy was used). Counts summed "
                    "over rounds; evidence (kernel log, device stats, zpool status, scrub "
                    "and checker output) is in each unit's integrity.json.")]
