"""Tiers: every filesystem of a (workload, metric) ranked, not only the best two.

A tier is a set of levels the Holm-corrected pairwise tests cannot tell apart. The
rule, deterministic when "cannot tell apart" is not transitive: order the levels by
median, best first (ties keep level order); the best opens tier 1 and leads it; each
next level joins the current tier unless the test separates it from that tier's
leader, in which case it opens (and leads) the next tier. Each level gets its ratio
to the best level's median with the bootstrap 95% interval of that ratio.

"~" (one tier) is said only when no pair is separated; when the sample sizes are too
small for any pair to reach significance after Holm (e.g. 2 rounds), the verdict says
so instead of a bare "~".
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fslab.analysis.significance import ALPHA, rounds_needed
from fslab.analysis.names import metric_label, ratio_text


def tiers(summary: pd.DataFrame, pairs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per ranked group with at least two levels: tiers (best first), each
    level's median, ratio to best (with CI) and tier, the sentence, and notes."""
    ranked = summary[summary["better"].isin(["higher", "lower"])]
    if ranked.empty or pairs.empty:
        return pd.DataFrame()
    pair_index = {(tuple(r[k] for k in keys), r["baseline"], r["other"]): r
                  for r in pairs.to_dict("records")}
    rows = []
    for key, g in ranked.groupby(keys, sort=True, dropna=False):
        if len(g) < 2:
            continue
        ident = dict(zip(keys, key))
        median = g["median"].to_numpy(dtype=float)
        better = g["better"].iloc[0]
        rank_by = median if better == "lower" else -median
        order = np.lexsort((np.arange(len(g)), rank_by, np.isnan(rank_by)))
        levels = [g["level"].iloc[i] for i in order]
        medians = {g["level"].iloc[i]: float(median[i]) for i in order}
        ns = {g["level"].iloc[i]: int(g["n"].iloc[i]) for i in order}

        def pair(x, y):
            r = pair_index.get((key, x, y))
            if r is not None:
                return r, False
            return pair_index.get((key, y, x)), True

        groups: list[list[str]] = [[levels[0]]]
        for lv in levels[1:]:
            r, _ = pair(groups[-1][0], lv)
            if r is not None and r["significant"]:
                groups.append([lv])
            else:
                groups[-1].append(lv)
        best = levels[0]
        info = {}
        for t, members in enumerate(groups, 1):
            for lv in members:
                ratio = medians[lv] / medians[best] if medians[best] else math.nan
                lo = hi = math.nan
                if lv == best:
                    lo = hi = 1.0
                else:
                    r, flipped = pair(best, lv)
                    if r is not None:
                        lo, hi = r["ratio_ci_lo"], r["ratio_ci_hi"]
                        if flipped:   # the stored ratio is best/lv
                            lo, hi = (1 / hi if hi else math.nan), (1 / lo if lo else math.nan)
                info[lv] = {"median": medians[lv], "ratio_to_best": ratio,
                            "ratio_ci": [lo, hi], "tier": t, "n": ns[lv]}
        group_pairs = [r for (k, _, _), r in pair_index.items() if k == key]
        tested = [r for r in group_pairs if not math.isnan(r["p"])]
        too_few = bool(tested) and all(r["smallest_p"] * len(tested) >= ALPHA for r in tested)
        if not tested:
            too_few = True
        n = min(ns.values())
        label = metric_label(ident.get("metric", ""))
        if len(groups) == 1:
            why = (f"n={n}: too few rounds for any test to separate {len(levels)} filesystems"
                   f" ({rounds_needed(len(levels))} per filesystem can)"
                   if too_few else "no significant difference")
            sentence = f"{label}: ~ ({why})"
        else:
            parts = []
            for t, members in enumerate(groups):
                words = []
                for lv in members:
                    ratio = info[lv]["ratio_to_best"]
                    words.append(lv if lv == best or t == 0 else f"{lv} ({ratio_text(ratio)})")
                parts.append(" ≈ ".join(words))
            sentence = f"{label}: " + " ≫ ".join(parts)
            why = ""
        rows.append({**ident, "better": better, "tiers": groups, "levels_info": info,
                     "best": groups[0] if len(groups) > 1 else [],
                     "one_tier": len(groups) == 1, "too_few": too_few, "n": n,
                     "test": "Mann-Whitney U (exact), Holm over all pairs", "line": sentence,
                     "why": why})
    return pd.DataFrame(rows)


def tier_rows(tier_table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The tiers flat, one row per (group, level), best first: for CSV and other tables."""
    rows = [{**{k: t[k] for k in keys}, "better": t["better"], "level": lv, "tier": d["tier"],
             "median": d["median"], "ratio_to_best": d["ratio_to_best"],
             "ratio_ci_lo": d["ratio_ci"][0], "ratio_ci_hi": d["ratio_ci"][1], "n": d["n"],
             "line": t["line"], "note": t["why"]}
            for t in tier_table.to_dict("records") for lv, d in t["levels_info"].items()]
    return pd.DataFrame(rows)
