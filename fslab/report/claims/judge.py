"""Each claim re-derived from a run's records: the comparisons it stands on, their tests,
and one verdict with its reason.

A claim is a family of comparisons (one, or one per sweep point, case or pair of
filesystems). Two-sample comparisons use the answer's pair test (stats.pair_test), Holm-
corrected across the family; the claim holds when at least `share` of them (default:
all) show the claimed direction, and, for a size claim, every such comparison's ratio
interval lies inside the stated band. Values identical in every round (capacity after
mkfs) have no sampling noise and are judged as numbers.
"""
from __future__ import annotations

import math
from typing import Any

import orjson
import pandas as pd

from fslab.analysis.pairwise import BLOCKED_LOG
from fslab.decide.posterior import POWER, smallest_detectable
from fslab.report.claims.model import Claim
from fslab.report.sharpness import could_see
from fslab.report.claims.stats import ALPHA, floor_words, holm, pair_test, rounds_to_decide
from fslab.metrics.format import human, number
from fslab.plan.profiles import parse_size

HOLDS = "holds"
SIZE_DIFFERS = "direction holds, size differs"
SIZE_NOT_SHOWN = "direction holds, size not shown"
REVERSED = "reversed"
NOT_REPRODUCED = "does not reproduce"
NO_DIFFERENCE = "no significant difference"
UNDECIDED = "undecided"
NOT_COMPARABLE = "not comparable"
NOT_MEASURED = "not measured"
VERDICTS = (HOLDS, SIZE_DIFFERS, SIZE_NOT_SHOWN, REVERSED, NOT_REPRODUCED, NO_DIFFERENCE,
            UNDECIDED, NOT_COMPARABLE, NOT_MEASURED)


class Missing(Exception):
    """The run lacks what the claim compares: verdict 'not measured', with the reason."""


# --- selecting the values ---------------------------------------------------------------------

def points(c: Claim, s: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The records split by sweep point (params not fixed by the claim), after keeping the
    claim's own point ("max": the largest value of that parameter run)."""
    parsed = {p: {k: str(v) for k, v in orjson.loads(p or "{}").items()} for p in s["params"].unique()}
    wanted = dict(c.params)
    for k, v in wanted.items():
        if v == "max":
            values = {p[k]: _magnitude(p[k]) for p in parsed.values() if k in p}
            magnitude = {raw: m for raw, m in values.items() if m is not None}
            if not magnitude:
                raise Missing(f"no {k} sweep in this run")
            wanted[k] = max(magnitude, key=magnitude.__getitem__)
    out: dict[str, list[str]] = {}
    for raw, p in parsed.items():
        if any(p.get(k) != v for k, v in wanted.items()):
            continue
        shown = ", ".join(f"{k}={v}" for k, v in sorted(p.items())
                          if k not in wanted and k != "workload")
        out.setdefault(shown, []).append(raw)
    if not out:
        point = ", ".join(f"{k}={v}" for k, v in c.params.items())
        raise Missing(f"the study's point ({point}) was not run at this profile")
    return [(label, s[s["params"].isin(raws)]) for label, raws in
            sorted(out.items(), key=lambda kv: _point_order(kv[0]))]


def _magnitude(v: str) -> float | None:
    """A param's value as a number: 16, or a size ('6553k') in bytes; None if neither."""
    try:
        return float(v)
    except ValueError:
        pass
    try:
        return float(parse_size(v))
    except (ValueError, TypeError, KeyError):
        return None


def _point_order(label: str) -> list[tuple[int, float, str]]:
    """Sweep points in numeric order of their values (numjobs=2 before numjobs=16)."""
    out = []
    for part in label.split(", "):
        v = part.partition("=")[2]
        m = _magnitude(v)
        out.append((0, m, "") if m is not None else (1, 0.0, v))
    return out


def series(g: pd.DataFrame, label: str, metric: str, per: str | None = None) -> pd.Series:
    """One value per round (summed over a case's rows, as fio's group_reporting would);
    with `per`, divided by that metric of the same round."""
    x = g[(g["label"] == label) & (g["metric"] == metric)]
    v = x.groupby("iteration")["value"].sum() if not x.empty else pd.Series(dtype=float)
    if per:
        d = g[(g["label"] == label) & (g["metric"] == per)].groupby("iteration")["value"].sum()
        v = (v / d[d > 0]).dropna()
    return v


def by_case(c: Claim, s: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The claim's cases: one group each, or one group summed per round (combine = "sum")."""
    if not c.cases:
        return [("", s)]
    present = [k for k in c.cases if (s["case"] == k).any()]
    absent = [k for k in c.cases if k not in present]
    if c.combine == "sum":
        if absent:
            raise Missing(f"no {', '.join(absent)} in this run")
        g = s[s["case"].isin(c.cases)]
        # per round and params point, the cases' values added (listing AND search together)
        g = g.groupby(["label", "params", "iteration", "metric", "unit"], as_index=False)["value"].sum()
        return [(" + ".join(c.cases), g)]
    if not present:
        raise Missing(f"no {' or '.join(c.cases)} of {c.suite} in this run")
    return [(k, s[s["case"] == k]) for k in present]


# --- one comparison ---------------------------------------------------------------------------

def constant(x: pd.Series) -> bool:
    """Identical in every round, and more than one round to know it."""
    return len(x) >= 2 and float(x.min()) == float(x.max())


def compare(c: Claim, where: str, a_name: str, a: pd.Series, b_name: str, b: pd.Series,
            unit: str) -> dict:
    """a vs b: medians, the test's p, the claimed-direction ratio and its interval."""
    out: dict[str, Any] = {"where": where, "a": a_name, "b": b_name, "n": (len(a), len(b)),
           "med_a": float(a.median()), "med_b": float(b.median()), "unit": unit,
           "p": math.nan, "ratio": math.nan, "ci": (math.nan, math.nan), "exact": False,
           "smallest_p": 1.0, "test": "", "matched": False,
           "values": ({int(i): float(v) for i, v in a.items()}, {int(i): float(v) for i, v in b.items()})}
    claimed_lower = c.less
    up = (out["med_b"] > out["med_a"]) - (out["med_b"] < out["med_a"])   # untested: the numbers
    if constant(a) and constant(b):
        out["exact"] = True
        ra = _ratio(out["med_a"], out["med_b"], claimed_lower)
        out.update(ratio=ra, ci=(ra, ra), p=0.0 if out["med_a"] != out["med_b"] else 1.0,
                   smallest_p=0.0)
    elif len(a) >= 2 and len(b) >= 2:
        t = pair_test(a.to_numpy(), b.to_numpy(), a.index.to_numpy(), b.index.to_numpy())
        # pair_test's ratio is median(b) / median(a); the claim's ratio is the slower over
        # the faster in the claimed direction
        lo, hi = t["ci"]
        if claimed_lower:
            ratio, ci = t["ratio"], (lo, hi)
        else:
            ratio = 1 / t["ratio"] if t["ratio"] else math.nan
            ci = (1 / hi if hi else math.nan, 1 / lo if lo else math.nan)
        out.update(p=t["p"], ratio=ratio, ci=ci, smallest_p=t["smallest_p"], test=t["test"],
                   matched=t["matched"])
        # the direction is the test's own estimate (within rounds when blocked): medians
        # across drifting rounds can point the other way than a significant test
        up = t["direction"]
    out["as_claimed"] = up > 0 if claimed_lower else up < 0
    out["opposite"] = up < 0 if claimed_lower else up > 0
    return out


def _ratio(a: float, b: float, claimed_lower: bool) -> float:
    num, den = (b, a) if claimed_lower else (a, b)
    return num / den if den else math.nan


# --- a family of comparisons -> one verdict ---------------------------------------------------

def family_verdict(c: Claim, rows: list[dict]) -> tuple[str, str]:
    """Holm across the family; `share` of it in the claimed direction for a verdict."""
    tested = [r for r in rows if not math.isnan(r["p"])]
    if not tested:
        n = rows[0]["n"] if rows else (0, 0)
        if rows and all(min(r["n"]) == 1 for r in rows):
            # one history per filesystem (S4's design): nothing to test, the reading is told
            return UNDECIDED, (f"{n[0]}+{n[1]} rounds: no test (need 2 each); the study's own "
                               f"single-run reading here: {single_reading(c, rows)}"
                               f"{more_rounds(n, rounds_to_decide('', True, len(rows)))}")
        # no test ran: "no significant difference" would read as a test that found none
        return UNDECIDED, (f"{n[0]}+{n[1]} rounds: too few to test (need 2 each)"
                           f"{more_rounds(n, rounds_to_decide('', True, len(rows)))}")
    adjusted = holm([r["p"] for r in tested]) if len(tested) > 1 else [tested[0]["p"]]
    for r, p in zip(tested, adjusted):
        r["p_holm"] = float(p)
    k = len(rows)
    need = max(1, math.ceil(c.share * k - 1e-9))
    good = [r for r in tested if r["p_holm"] < ALPHA and r["as_claimed"]]
    bad = [r for r in tested if r["p_holm"] < ALPHA and r["opposite"]]
    test = _test_words(tested, k)
    if len(good) >= need and not bad:
        return _size_verdict(c, good, test, k, need)
    if len(bad) >= need:
        return REVERSED, f"{_count(bad, k)}the opposite of the claim{test}"
    if not good and not bad:
        exact_same = [r for r in tested if r["exact"]]
        if exact_same and len(exact_same) == len(tested):
            return NOT_REPRODUCED, "the same value in every round, equal for both"
        noisy = [r for r in tested if not r["exact"]]
        m = len(tested)
        need = max(rounds_to_decide(r["test"], r["matched"], m) for r in noisy)
        n = noisy[0]["n"]
        if all(r["smallest_p"] * m >= ALPHA for r in noisy) and need > min(n):
            # no outcome of these rounds could have been significant: nothing was decided
            return UNDECIDED, (f"{n[0]}+{n[1]} rounds: too few for any verdict ("
                               f"{floor_words(noisy[0]['test'], noisy[0]['matched'], n, noisy[0]['smallest_p'])}"
                               f"{', before Holm over ' + str(m) if m > 1 else ''})"
                               f"{more_rounds(n, need)}")
        return NO_DIFFERENCE, f"no comparison significant{test}{_detectable(noisy, m)}"
    parts = [f"as claimed at {len(good)}", f"the opposite at {len(bad)}"] if bad else \
        [f"as claimed at {len(good)}"]
    return UNDECIDED, (f"{' and '.join(parts)} of {k} {_things(k)}; the claim needs {need} "
                       f"as claimed{' and none opposite' if bad else ''}{test}")


def more_rounds(n: tuple[int, int], need: int) -> str:
    """The advice, only ever for more rounds than the run has (stats.rounds_to_decide: the
    run's own note counts the same way)."""
    if need <= min(n):
        return ""
    # -n, not a profile: a plan may fix its rounds at every profile (S4: one history)
    return f"; {need} rounds per filesystem (-n {need}) can decide"


def _detectable(rows: list[dict], comparisons: int) -> str:
    """What these rounds could have seen: decide's smallest detectable difference (paired t on
    within-round log ratios, 80% power, Holm-first level over the family), the largest over
    the comparisons; only where that test is the one used."""
    per = [smallest_detectable({"a": r["values"][0], "b": r["values"][1]}, "a", ["b"], ALPHA,
                               comparisons) for r in rows if r["test"] == BLOCKED_LOG]
    per = [x for x in per if math.isfinite(x)]
    if not per:
        return ""
    over = f", the largest over the {len(per)} comparisons" if len(per) > 1 else ""
    # could_see: the report's own wording of the same figure ("could see ≥ 23%")
    return f"; smallest detectable difference: this run {could_see(max(per))} ({POWER:.0%} power{over})"


def single_reading(c: Claim, rows: list[dict]) -> str:
    """What one round of each shows, as the study read its own single run: the direction
    at each comparison and, for a size claim, the ratio against the band."""
    band = c.band_range
    out = []
    for r in rows:
        where = f"{r['where']}: " if r["where"] else ""
        way = "as claimed" if r["as_claimed"] else "the opposite" if r["opposite"] else "equal"
        ratio = _ratio(r["med_a"], r["med_b"], c.less)
        text = f"{where}{way}"
        if r["as_claimed"] and not math.isnan(ratio):
            text += f", {number(ratio)}×"
            if band:
                inside = band[0] <= ratio <= band[1]
                text += (f", {'inside' if inside else 'outside'} the band {number(band[0])}–"
                         f"{number(band[1])}× around the study's {number(c.size or math.sqrt(band[0] * band[1]))}×")
        out.append(text)
    return "; ".join(out)


def _things(k: int) -> str:
    return "comparison" if k == 1 else "comparisons"


def _count(rows: list[dict], k: int) -> str:
    return "" if k == 1 else f"{len(rows)} of {k} {_things(k)}; "


def _test_words(tested: list[dict], k: int) -> str:
    noisy = [r for r in tested if not r["exact"]]
    words = []
    if noisy:
        least = min(r["p_holm"] for r in noisy)
        name = noisy[0].get("test") or "Mann-Whitney U"
        words.append(f"{name} p = {least:.3g}" if len(tested) == 1 else
                     f"{name}, Holm over {len(tested)}; least p = {least:.3g}")
    if len(noisy) < len(tested):
        words.append("identical in every round: judged as numbers")
    return f" ({'; '.join(words)})"


def _size_verdict(c: Claim, good: list[dict], test: str, k: int, need: int) -> tuple[str, str]:
    """The direction holds; is the size inside the stated band around the published one?
    A comparison's size is its ratio (order) or its difference (change), with its interval."""
    shown = _count(good, k)
    band = c.band_range
    if band is None:
        return HOLDS, f"{shown}as claimed{test}"
    lo, hi = band
    unit = good[0].get("size_unit", "×")
    cis = [_size_ci(r) for r in good]
    inside = [ci for ci in cis if ci and lo <= ci[0] and ci[1] <= hi]
    outside = [ci for ci in cis if ci and (ci[1] < lo or ci[0] > hi)]
    here = _sizes(good, unit)
    words = f"band {number(lo)}–{number(hi)}{unit} around the study's {number(c.size or math.sqrt(lo * hi))}{unit}"
    if len(inside) == len(good):
        return HOLDS, f"{shown}{here} here, inside the {words}{test}"
    if outside:
        return SIZE_DIFFERS, f"{here} here; {shown}{_cis(good, unit)}: outside the {words}{test}"
    return SIZE_NOT_SHOWN, (f"{here} here; {shown}{_cis(good, unit)}: not inside the {words}; "
                            f"more rounds narrow it{test}")


def _size_ci(r: dict) -> tuple[float, float] | None:
    ci = r.get("size_ci", r["ci"])
    if ci is None or any(math.isnan(x) for x in ci):
        return None
    return ci


def _sizes(rows: list[dict], unit: str) -> str:
    vals = sorted(r.get("size_value", r["ratio"]) for r in rows)
    vals = [v for v in vals if not math.isnan(v)]
    if not vals:
        return "–"
    return f"{number(vals[0])}{unit}" if vals[0] == vals[-1] else \
        f"{number(vals[0])}–{number(vals[-1])}{unit}"


def _cis(rows: list[dict], unit: str) -> str:
    def one(r: dict) -> str:
        ci = _size_ci(r)
        if ci is None:
            return f"{number(r.get('size_value', r['ratio']))}{unit}, no interval (too few rounds)"
        if ci[0] == ci[1]:
            return f"{number(ci[0])}{unit} exactly"
        return f"95% CI {number(ci[0])}–{number(ci[1])}{unit}"
    return "; ".join(one(r) for r in rows)


# --- measured text ----------------------------------------------------------------------------

def fmt(v: float | None, unit: str, signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    sign = "+" if signed and v > 0 else ""
    if unit in ("%", "pp"):   # capacity findings differ by 0.01-0.02 %: JFS lost 0.00195 pp
        digits = 2 if v == 0 or abs(v) >= 0.01 else 2 - math.floor(math.log10(abs(v)))
        return f"{sign}{v:.{digits}f}{'%' if unit == '%' else ' pp'}"
    if unit in ("s", "B", "B/s", "ns", "ops/s"):
        return sign + human(float(v), unit)
    suffix = {"ratio": "x", "fraction": ""}.get(unit, f" {unit}" if unit else "")
    return f"{sign}{number(v)}{suffix}"


def measured_pair(r: dict) -> str:
    where = f"{r['where']}: " if r["where"] else ""
    n = r["n"]
    counts = f"medians of {n[0]}/{n[1]}" if n[0] != 1 or n[1] != 1 else "one round each"
    return (f"{where}{r['a']} {fmt(r['med_a'], r['unit'])}, {r['b']} {fmt(r['med_b'], r['unit'])} "
            f"({counts})")
