"""Every filesystem of a (workload, metric) ranked, in groups that mean what they say.

The Holm-corrected pair tests decide; the groups only show them. A pair is shown as
separated if and only if its own test is significant:

- **Tiers** ("a ≈ b ≫ c") when the tests allow it: "cannot tell apart" holds within
  every tier and every pair across tiers is significant, the tiers run best first, and
  each significant pair's better level (by its own test's estimate) sits in the higher
  tier.
- **Letters** otherwise (a compact letter display, as multiple-comparison software
  prints it: Piepho's insert-absorb): levels that share a letter are not told apart, two
  levels with no letter in common are. "a [a] · b [ab] · c [b]": a and c differ, b
  cannot be told from either. Never a partition the tests did not make.
- **One group** ("~") only when no pair is significant, with the reason: no significant
  difference, or too few rounds for any test to separate them; "a ≈ b (within 1%)" when
  every pair's test separated it by less than the minimum meaningful difference
  (significance.MEANINGFUL: such a pair is not separated anywhere, pairwise._holm).

Levels are listed best first by the tests' own estimate: where the group is compared
within rounds, the geometric mean with each round's drift taken out (the additive fit
log value = level + round; with every level in every round it is the plain geometric
mean, and two levels' differ by exactly their mean within-round log ratio), a suite's
declared estimate (e.g. a pooled rate), else the median. Each level gets its ratio to the best with the interval of that pair's test.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pandas as pd

from fslab.analysis.significance import ALPHA, MEANINGFUL, MIN_BLOCKS, rounds_needed, sign_flip_rounds
from fslab.analysis.pairwise import SIGN_FLIP, PairRow, effect_sign

TIERS, LETTERS, ONE = "tiers", "letters", "one group"
WITHIN = (f"within {MEANINGFUL:.0%}: their tests tell them apart by less than the {MEANINGFUL:.0%} "
          f"fslab counts as a difference")


def tiers(summary: pd.DataFrame, pairs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per ranked group with at least two levels: the display (tiers, letters or
    one group), the levels best first with their median, estimate, ratio to best (with
    its interval), tier and letters, every pair with its test, and why a '~'."""
    ranked = summary[summary["better"].isin(["higher", "lower"])]
    if ranked.empty or pairs.empty:
        return pd.DataFrame()
    by_group: dict[tuple, list[dict]] = {}
    for r in pairs.to_dict("records"):
        by_group.setdefault(tuple(r[k] for k in keys), []).append(r)
    # read row by row below, as dicts made in one go: a frame's rows (or a small frame's
    # to_dict) cost ~1 ms each, most of a report's ranking
    grouped = ranked.groupby(keys, sort=True, dropna=False)
    members: list[list[dict]] = [[] for _ in range(grouped.ngroups)]
    for number, record in zip(grouped.ngroup().to_numpy(), ranked.to_dict("records")):
        members[number].append(record)
    rows = []
    for records in members:
        if len(records) < 2:
            continue
        key = tuple(records[0][k] for k in keys)
        rows.append(_rank(dict(zip(keys, key)), records, by_group.get(key, [])))
    return pd.DataFrame(rows)


def _rank(ident: dict, records: list[dict], group_pairs: list[dict]) -> dict:
    """One group ranked; `records`: its summary rows (one per level, in the summary's order)."""
    better = records[0]["better"]
    estimate = _estimates(records, group_pairs)
    names = [r["level"] for r in records]
    first_row: dict = {}
    for r in records:
        first_row.setdefault(r["level"], r)
    rank_by = np.array([estimate[lv] for lv in names])
    rank_by = rank_by if better == "lower" else -rank_by
    order = [names[i] for i in np.lexsort((np.arange(len(names)), rank_by, np.isnan(rank_by)))]
    pair = _pair_lookup(group_pairs)
    sig = {frozenset((r["baseline"], r["other"])) for r in group_pairs if r["significant"]}
    columns = letter_columns(order, sig)
    display, groups = _display(order, columns, sig, pair)
    best = order[0]
    letters = _letters(order, columns)
    info = {}
    for lv in order:
        row = first_row[lv]
        ratio, lo, hi, confidence = _ratio_to(best, lv, pair, estimate)
        info[lv] = {"median": float(row["median"]), "estimate": estimate[lv],
                    "ratio_to_best": ratio, "ratio_ci": [lo, hi], "ratio_ci_level": confidence,
                    "tier": next((t for t, members in enumerate(groups, 1) if lv in members), None)
                    if display == TIERS else (1 if display == ONE else None),
                    "letters": letters[lv] if display == LETTERS else "",
                    "separated_from_best": frozenset((best, lv)) in sig,
                    "design": (pair(best, lv)[0] or {}).get("design", "") if lv != best else "",
                    # the best-ranked level no test separates from this one (itself at worst):
                    # what a level may be taken for (recommend scores it as that one)
                    "peer": next(x for x in order if x == lv or frozenset((x, lv)) not in sig),
                    "n": int(row["n"])}
    tested = [r for r in group_pairs if not math.isnan(r["p"])]
    too_few = not tested or all(r["smallest_p"] * len(tested) >= ALPHA for r in tested)
    n = min(int(r["n"]) for r in records)
    why = ""
    # every pair told apart by its test by less than the minimum meaningful difference
    within = bool(group_pairs) and all(r.get("negligible") for r in group_pairs)
    if display == ONE:
        why = (WITHIN if within else _too_few(n, len(order), tested, group_pairs)
               if too_few else "no significant difference")
    tests = sorted({r["test"] for r in tested if r["test"]})
    return {**ident, "better": better, "display": display, "order": order,
            "tiers": groups if display != LETTERS else [], "letters": letters if display == LETTERS else {},
            "levels_info": info,
            # the levels no test separates from the best: the winners a reader may pick from
            "best": [lv for lv in order if frozenset((best, lv)) not in sig] if display != ONE else [],
            "one_tier": display == ONE, "too_few": too_few and display == ONE and not within,
            "within": within and display == ONE, "n": n,
            "test": ", ".join(tests) + (", Holm over all pairs" if tests else ""),
            "pairs": [_pair_summary(r) for r in group_pairs], "why": why}


def _too_few(n: int, k: int, tested: list[dict], group_pairs: list[dict]) -> str:
    """Why no pair can be separated, naming the rounds the test in use needs: where the
    within-round differences did not vary, the exact sign-flip test's (6 for 2
    filesystems, 8 for 4), not the t-test's 3 ("n=5 ... (3 per filesystem can)" was said
    of a group no 5 rounds could separate)."""
    if tested and all(r["test"] == SIGN_FLIP for r in tested):
        return (f"n={n}: too few rounds for the exact sign-flip test (the within-round "
                f"differences did not vary) to separate {k} filesystems "
                f"({sign_flip_rounds(k)} per filesystem can)")
    return (f"n={n}: too few rounds for any test to separate {k} filesystems"
            f" ({rounds_needed(k, _matched(group_pairs))} per filesystem can)")


def _estimates(rows: list[dict], group_pairs: list[dict]) -> dict[str, float]:
    """Each level's estimate, as the module doc says (rows: the group's summary records)."""
    out = {}
    for row in rows:
        value = float(row["median"])
        if "estimate" in row and isinstance(row["estimate"], (int, float)) and not math.isnan(row["estimate"]):
            value = float(row["estimate"])
        elif _blocked(group_pairs) and not math.isnan(row.get("gmean_adjusted", math.nan)):
            value = float(row["gmean_adjusted"])
        out[row["level"]] = value
    return out


def _blocked(group_pairs: list[dict]) -> bool:
    return bool(group_pairs) and all(r.get("design") == "blocked" for r in group_pairs)


def _matched(group_pairs: list[dict]) -> bool:
    """Every pair ran in the same rounds: more rounds would be compared within rounds."""
    # a pair that had the rounds and still got the unpaired test (a deterministic quantity)
    # is not helped by more rounds the way a blocked one is: it needs the unpaired count
    return bool(group_pairs) and all(
        r.get("design") == "blocked"
        or (r.get("matched") and min(r["n_baseline"], r["n_other"]) < MIN_BLOCKS)
        for r in group_pairs)


# x, y -> the row of x vs y and whether it is stored the other way round (y vs x)
PairLookup = Callable[[str, str], tuple[dict | None, bool]]


def _pair_lookup(group_pairs: list[dict]) -> PairLookup:
    index = {(r["baseline"], r["other"]): r for r in group_pairs}

    def pair(x: str, y: str) -> tuple[dict | None, bool]:
        """The row of x vs y and whether it is stored the other way round (y vs x)."""
        if (x, y) in index:
            return index[(x, y)], False
        return index.get((y, x)), True
    return pair


def letter_columns(order: list[str], significant: set[frozenset]) -> list[list[str]]:
    """Piepho's insert-absorb: start with one column holding every level; for each
    significant pair, split every column holding both into one without each; drop a
    column contained in another. Two levels then share a column iff their pair is not
    significant. Columns come back in the order of their best member, members best first."""
    rank = {lv: i for i, lv in enumerate(order)}
    columns: list[frozenset] = [frozenset(order)]
    for pair in sorted(significant, key=lambda p: sorted(rank[x] for x in p)):
        x, y = tuple(pair)
        split = []
        for c in columns:
            if x in c and y in c:
                split += [c - {x}, c - {y}]
            else:
                split.append(c)
        columns = [c for i, c in enumerate(split)
                   if c and not any((c < o) or (c == o and j < i) for j, o in enumerate(split))]
    ordered = sorted(columns, key=lambda c: sorted(rank[x] for x in c))
    return [sorted(c, key=rank.__getitem__) for c in ordered]


def _letters(order: list[str], columns: list[list[str]]) -> dict[str, str]:
    return {lv: "".join(_letter(i) for i, c in enumerate(columns) if lv in c) for lv in order}


def _letter(i: int) -> str:
    return chr(ord("a") + i) if i < 26 else f"({i + 1})"


def _display(order: list[str], columns: list[list[str]], sig: set[frozenset],
             pair: PairLookup) -> tuple[str, list[list[str]]]:
    """(TIERS, the tiers) when the columns partition the levels in their order and every
    significant step goes the way the order says; (LETTERS, the columns) otherwise."""
    if not sig:
        return ONE, [list(order)]
    flat = [lv for c in columns for lv in c]
    if flat == order:       # disjoint columns, each a run of consecutive levels
        position = {lv: t for t, c in enumerate(columns) for lv in c}
        consistent = True
        for p in sig:
            hi, lo = sorted(p, key=order.index)
            r, flipped = pair(hi, lo)
            if r is None:
                continue
            up = effect_sign(PairRow.of(r)) * (-1 if flipped else 1)      # lo against hi
            worse = up < 0 if r["better"] == "higher" else up > 0
            consistent &= worse and position[hi] < position[lo]
        if consistent:
            return TIERS, columns
    return LETTERS, columns


def _ratio_to(best: str, lv: str, pair: PairLookup, estimate: dict) -> tuple[float, float, float, float]:
    """lv's ratio to the best, from their pair's test (its interval and confidence)."""
    if lv == best:
        return 1.0, 1.0, 1.0, math.nan
    r, flipped = pair(best, lv)
    if r is None or math.isnan(r["ratio"]):
        e = estimate[best]
        return (estimate[lv] / e if e else math.nan), math.nan, math.nan, math.nan
    ratio, lo, hi = r["ratio"], r["ratio_ci_lo"], r["ratio_ci_hi"]
    if flipped:        # the stored ratio is best/lv
        ratio, lo, hi = (1 / ratio if ratio else math.nan), (1 / hi if hi else math.nan), (1 / lo if lo else math.nan)
    return ratio, lo, hi, r.get("ratio_ci_level", math.nan)


def _pair_summary(r: dict) -> dict:
    return {"a": r["baseline"], "b": r["other"], "test": r["test"], "design": r.get("design", ""),
            "p": r["p"], "p_holm": r["p_holm"], "significant": bool(r["significant"]),
            "ratio": r["ratio"], "ratio_ci": [r["ratio_ci_lo"], r["ratio_ci_hi"]],
            "ratio_ci_level": r.get("ratio_ci_level", math.nan), "note": r.get("note", "")}
