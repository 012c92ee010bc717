"""The decision, drawn: per workload of the answer, each filesystem's ratio to the best
with the interval of its pair's test, and the group the tests put it in (tier, letters,
or one group). What the answer's line says, as a forest plot.

Not a suite figure (no SUITES): html.py places these right after the answer, from the
answer's own rankings (fslab.report.headline), so figure and sentence cannot disagree.
"""
from __future__ import annotations

import math

from markupsafe import escape

from fslab.analysis.counts import DESIGN as POOLED
from fslab.analysis.names import ratio_text
from fslab.metrics import label as metric_label
from fslab.analysis.tiers import LETTERS, ONE, TIERS
from fslab.report.figures import Section
from fslab.report.svgplot import dot_interval

PLACE = "decision"
WINNER, BEHIND = "#176b2c", "#5b6b7a"   # not told apart from the best / separated from it
LOG_SPAN = 4.0    # ratios spanning more than this factor get a log axis


def figures(entries: list[dict], only: set[str] | None = None) -> list[Section]:
    """One section per answer line (workload): one chart per ranked metric it names; with
    `only` (a decide's final-stage candidates), those levels alone, against their best."""
    out = []
    for e in entries:
        charts = [c for t in e["rankings"] if (c := chart(restricted(t, only) if only else t))]
        if not charts:
            continue
        body = '<div class="decision">' + "".join(charts) + "</div>"
        if e.get("memory_bound"):
            body += f'<p class="warn">{escape(e["memory_bound"]["why"])}</p>'
        if e.get("cpu_bound"):
            body += f'<p class="warn">{escape(e["cpu_bound"]["why"])}</p>'
        out.append(Section(e["workload"], body))
    return out


CAPTION = ("Each dot: a filesystem's ratio to the best (the first row) on that metric, "
           "from the test that compared the two (within-round geometric-mean ratio where "
           "rounds pair them); whiskers: that test's interval (95% unless the note gives its "
           "own level; none where the test has none). Green: not told apart from the best "
           "(Holm-corrected); grey: significantly behind. The note gives the group the "
           "tests made: tier N (a ≈ b ≫ c), letters (a shared letter = not told apart), "
           "or ~ (no pair told apart). For a staged fslab decide, the last stage's "
           "candidates alone, against the best of them, each marked 'apart (Holm)' where "
           "its pair's own corrected test separated it.")


def chart(t: dict) -> str | None:
    """The forest plot of one ranking (a row of fslab.analysis.tiers)."""
    info, order = t["levels_info"], t.get("order") or list(t["levels_info"])
    if len(order) < 2:
        return None
    pooled = any(info[lv].get("design") == POOLED for lv in order)
    rows = []
    for lv in order:
        d = info[lv]
        color = BEHIND if d["separated_from_best"] else WINNER
        if pooled:   # counts of trials: the rates themselves (no ratio interval exists)
            rows.append({"label": lv, "value": 100 * d["estimate"], "color": color,
                         "note": f"{d['estimate']:.0%} · {group_text(t, d)}"})
            continue
        lo, hi = (d.get("ratio_ci") or [math.nan, math.nan])[:2]
        rows.append({"label": lv, "value": d["ratio_to_best"], "lo": lo, "hi": hi, "color": color,
                     "note": note(lv == order[0], d, t)})
    arrow = "higher is better" if t["better"] == "higher" else "lower is better"
    title = f"{metric_label(t.get('metric', ''), t.get('suite'))} ({arrow})"
    if pooled:
        return dot_interval(rows, title, "rate (%)", log=False, reference=None)
    values = [v for r in rows for v in (r["value"], r.get("lo"), r.get("hi"))
              if isinstance(v, float) and math.isfinite(v) and v > 0]
    log = bool(values) and max(values) / min(values) > LOG_SPAN
    return dot_interval(rows, title, "ratio to the best (×)", log=log, reference=1.0,
                        tick_format=_ratio_tick)


def restricted(t: dict, only: set[str]) -> dict:
    """The ranking of the levels in `only` alone (a decide's last stage: stage-1 candidates
    beside stage-2 ones, on other rounds, made rows above 1x under 'ratio to the best'):
    ratios to the best of them from their pairs' own tests, green or grey by that pair's
    Holm-corrected test, and no group mark (the group's tiers or letters were made with
    the other levels)."""
    order = [lv for lv in (t.get("order") or list(t["levels_info"])) if lv in only]
    if len(order) == len(t.get("order") or t["levels_info"]) or len(order) < 2:
        return t
    best = order[0]
    pairs = {(p["a"], p["b"]): p for p in t.get("pairs") or []}
    info = {}
    for lv in order:
        d = dict(t["levels_info"][lv])
        p, flip = pairs.get((best, lv)), False
        if p is None:
            p, flip = pairs.get((lv, best)), True
        if lv == best:
            d.update(ratio_to_best=1.0, ratio_ci=[math.nan, math.nan], separated_from_best=False)
        elif p is not None:
            r, (lo, hi) = p["ratio"], p["ratio_ci"]
            if flip:
                r, lo, hi = 1 / r, 1 / hi, 1 / lo
            d.update(ratio_to_best=r, ratio_ci=[lo, hi], ratio_ci_level=p.get("ratio_ci_level"),
                     separated_from_best=bool(p["significant"]))
        info[lv] = d
    return {**t, "order": order, "levels_info": info, "display": ""}


def note(is_best: bool, d: dict, t: dict) -> str:
    """'best  tier 1', '0.047× (0.041–0.052)  tier 2', '1.4× (1.1–1.8, 96.8%)  [b]'."""
    group = group_text(t, d)
    if is_best:
        return f"best · {group}" if group else "best"
    ratio = d["ratio_to_best"]
    lo, hi = (d.get("ratio_ci") or [math.nan, math.nan])[:2]
    text = ratio_text(ratio)
    if all(isinstance(x, float) and math.isfinite(x) for x in (lo, hi)):
        level = d.get("ratio_ci_level")
        stated = (f", {level:.1%}" if isinstance(level, float) and math.isfinite(level)
                  and abs(level - 0.95) > 1e-3 else "")
        text += f" ({ratio_text(lo)[:-1]}–{ratio_text(hi)}{stated})"
    else:
        text += " (no interval)"
    return f"{text} · {group}" if group else text


def group_text(t: dict, d: dict) -> str:
    if t["display"] == TIERS:
        return f"tier {d['tier']}"
    if t["display"] == LETTERS:
        return f"[{d['letters']}]"
    if t["display"] == ONE:
        return "~"
    return "apart (Holm)" if d.get("separated_from_best") else ""


def _ratio_tick(v: float) -> str:
    return f"{v:g}×"
