"""The ranking of one (workload, metric) in words: the one renderer of what
fslab.analysis.tiers decided, for the terminal, Markdown, HTML, CSV and JSON alike.

  tiers:    "write IOPS: xfs ≈ ext4 ≫ btrfs (0.047×) ≫ zfs (0.014×)"
  letters:  "p99 read latency: zfs [a], btrfs [ab], xfs [b] (1.4×), ext4 [b] (1.5×)"
  one:      "write IOPS: ~ (no significant difference)"
  within:   "write amplification: xfs ≈ ext4 (within 1%)" (separated by less than fslab's
            minimum meaningful difference: significance.MEANINGFUL)
"""
from __future__ import annotations

import pandas as pd

from fslab.analysis.names import ratio_text
from fslab.metrics import label as metric_label
from fslab.analysis.counts import DESIGN as POOLED
from fslab.analysis.significance import MEANINGFUL
from fslab.analysis.tiers import LETTERS, ONE
from fslab.report.sharpness import could_see

NO_DIFFERENCE = "no significant difference"

LEGEND = ("≈ not told apart, ≫ each pair across it significantly apart (Holm), [a] [ab]: "
          "a shared letter = not told apart, (×) ratio to the best")
LETTERS_NOTE = ("[a], [ab] ...: filesystems that share a letter are not told apart by their "
                "Holm-corrected test; two with no letter in common are told apart")


def ranking_text(t: dict, numbered_why: str | None = None) -> str:
    """The ranking without its metric label; `numbered_why` stands in for a '~' reason
    said once elsewhere (e.g. '[1]')."""
    info = t["levels_info"]
    order = t.get("order") or list(info)
    best = order[0]

    def behind(lv: str) -> str:
        """How far behind the best: its ratio, or for pooled counts both rates."""
        d = info[lv]
        if d.get("design") == POOLED:
            return f"({d['estimate']:.0%} vs {info[best]['estimate']:.0%})"
        return f"({ratio_text(d['ratio_to_best'])})"
    if t["display"] == ONE:
        if t.get("within"):
            return f"{' ≈ '.join(order)} (within {MEANINGFUL:.0%})"
        if not says_why(t):         # what the tests could have seen says more
            return f"~ ({could_see(t['mde'])})"
        return f"~ {numbered_why}" if numbered_why else f"~ ({t['why']})"
    if t["display"] == LETTERS:
        words = []
        for lv in order:
            d = info[lv]
            ratio = f" {behind(lv)}" if d["separated_from_best"] else ""
            words.append(f"{lv} [{d['letters']}]{ratio}")
        return ", ".join(words)
    parts = []
    for i, members in enumerate(t["tiers"]):
        parts.append(" ≈ ".join(lv if lv == best or i == 0 else
                                f"{lv} {behind(lv)}" for lv in members))
    return " ≫ ".join(parts)


def says_why(t: dict) -> bool:
    """A '~' says its reason, unless it is 'no significant difference' and the run's
    sharpness says more ('~ (could see ≥ 23%)')."""
    return not (t["display"] == ONE and t["why"] == NO_DIFFERENCE
                and could_see(t.get("mde", float("nan"))))


def best_text(t: dict) -> str:
    """The best and the levels no test separates from it: "xfs ≈ ext4" only where no pair
    among them is separated, else "xfs (ext4, btrfs not told apart from it)", since "≈"
    must never join a pair whose own test separated it."""
    best = list(t["best"])
    if len(best) < 2:
        return "".join(best)
    apart = {frozenset((p["a"], p["b"])) for p in t.get("pairs", []) if p["significant"]}
    if not any(frozenset((x, y)) in apart for i, x in enumerate(best) for y in best[i + 1:]):
        return " ≈ ".join(best)
    return f"{best[0]} ({', '.join(best[1:])} not told apart from it)"


def ranking_line(t: dict, numbered_why: str | None = None) -> str:
    return f"{metric_label(t.get('metric', ''), t.get('suite'))}: {ranking_text(t, numbered_why)}"


def tier_rows(tier_table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The ranking flat, one row per (group, level), best first: for CSV and other tables."""
    rows = [{**{k: t[k] for k in keys}, "better": t["better"], "level": lv, "mde": t.get("mde"),
             "tier": d["tier"], "letters": d["letters"],
             "median": d["median"], "ratio_to_best": d["ratio_to_best"],
             "ratio_ci_lo": d["ratio_ci"][0], "ratio_ci_hi": d["ratio_ci"][1],
             "ratio_ci_level": d["ratio_ci_level"], "n": d["n"],
             "line": ranking_line(t), "note": t["why"]}
            for t in tier_table.to_dict("records") for lv, d in t["levels_info"].items()]
    return pd.DataFrame(rows)
