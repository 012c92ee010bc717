"""One function per claim kind (order, change, value, equal): the claim's comparisons on
this run's records, its verdict, the reason, and what was measured."""
from __future__ import annotations

import numpy as np
import pandas as pd

from fslab import metrics
from fslab.report.claims import context
from fslab.report.claims.judge import (
    HOLDS, NO_DIFFERENCE, NOT_COMPARABLE, NOT_MEASURED, NOT_REPRODUCED, REVERSED, SIZE_DIFFERS,
    UNDECIDED, Missing, by_case, compare, family_verdict, fmt, measured_pair, points,
    series)
from fslab.report.claims.model import Claim
from fslab.report.claims.stats import ALPHA, median_ci, tost
from fslab.store.environment import RunEnvironment

# the claim's rows, per where it is judged ("" when it is judged once)
Groups = list[tuple[str, pd.DataFrame]]


def judge(c: Claim, recs: pd.DataFrame, env: RunEnvironment | dict) -> dict:
    """The claim's row: {study, claim, published, measured, verdict, why}."""
    env = RunEnvironment.of(env)
    try:
        verdict, why, measured = _judge(c, recs, env)
    except Missing as e:
        verdict, why, measured = NOT_MEASURED, str(e), "–"
    verdict, why = qualify(verdict, why, env, c.filesystems, c.about, c.scaled)
    stood_in = context.history_note(env, c.suite, c.cases) if verdict != NOT_MEASURED else ""
    if stood_in:
        why = f"{why}; {stood_in}"
    return {"study": c.study, "claim": c.claim, "published": c.published, "measured": measured,
            "verdict": verdict, "why": why}


def qualify(verdict: str, why: str, env: RunEnvironment, labels: list[str],
            about: str = "performance", scaled: bool = True) -> tuple[str, str]:
    """What the run's environment changes about a verdict: zfs-fuse makes a speed or CPU
    claim not comparable (the verdict measured here goes into the reason); a TCG guest
    and a scaled-down profile are said."""
    if verdict == NOT_MEASURED:
        return verdict, why
    reason = context.not_comparable_reason(env, labels, about)
    if reason:
        why, verdict = f"{reason}. Measured here: {verdict}: {why}", NOT_COMPARABLE
    notes = [context.emulation_note(env) if about != "space" else "",
             context.profile_note(env) if scaled else ""]
    for note in filter(None, notes):
        why = f"{why}; {note}"
    return verdict, why


def _judge(c: Claim, recs: pd.DataFrame, env: RunEnvironment) -> tuple[str, str, str]:
    labels = set(recs["label"])
    missing = [fs for fs in c.filesystems if fs not in labels]
    if missing:
        raise Missing(f"{' and '.join(missing)} not run" + (f" ({c.missing})" if c.missing else ""))
    s = recs[(recs["suite"] == c.suite) & recs["label"].isin(c.filesystems)
             & recs["metric"].isin({c.metric, c.than_metric, c.per} - {None})]
    if s.empty:
        where = f"{c.suite}/{' + '.join(c.cases)}" if c.cases else c.suite
        raise Missing(f"no {_named(c, c.metric)} of {where} in this run")
    groups = [(", ".join(x for x in (case, point) if x), g)
              for case, cg in by_case(c, s) for point, g in points(c, cg)]
    if len(groups) == 1:   # cases and params are named only where the claim has several
        groups = [("", groups[0][1])]
    return KINDS[c.kind](c, groups, s)


def _named(c: Claim, metric: str | None) -> str:
    """A metric as the report's reader sees it: its catalogue label (keys are for exports:
    "grep_cost_aged 13.5 s/GB vs grep_cost_unaged" was printed)."""
    return metrics.label(metric, c.suite) if metric else ""


def _unit(g: pd.DataFrame, c: Claim) -> str:
    u = g.loc[g["metric"] == c.metric, "unit"]
    unit = str(u.iloc[0]) if not u.empty else ""
    return f"{unit} per CPU %" if c.per else unit


def order(c: Claim, groups: Groups, _s: pd.DataFrame) -> tuple[str, str, str]:
    rows = []
    for where, g in groups:
        unit = _unit(g, c)
        for a in c.a:
            for b in c.b:
                x, y = series(g, a, c.metric, c.per), series(g, b, c.metric, c.per)
                if not x.empty and not y.empty:
                    rows.append(compare(c, where, a, x, b, y, unit))
    if not rows:
        raise Missing(f"no {_named(c, c.metric)} for {' or '.join(c.filesystems)} in this run")
    verdict, why = family_verdict(c, rows)
    return verdict, why, "; ".join(measured_pair(r) for r in rows)


def change(c: Claim, groups: Groups, _s: pd.DataFrame) -> tuple[str, str, str]:
    """One filesystem's metric against another of its metrics, round by round."""
    rows, texts = [], []
    than = _than(c)
    for where, g in groups:
        unit = _unit(g, c)
        for a in c.a:
            x, y = series(g, a, c.metric), series(g, a, than)
            both = pd.concat([x, y], axis=1, join="inner").dropna()
            if both.empty:
                continue
            x, y = both.iloc[:, 0], both.iloc[:, 1]
            r = compare(c, where, _named(c, c.metric), x, _named(c, than), y, unit)
            diff = (x - y).to_numpy()
            r["size_value"] = abs(float(np.median(diff)))
            r["size_ci"] = _abs_ci(diff)
            r["size_unit"] = " pp" if unit == "%" else f" {unit}"
            rows.append(r)
            texts.append(f"{where + ': ' if where else ''}{a}: {_named(c, c.metric)} "
                         f"{fmt(x.median(), unit)} vs {_named(c, than)} {fmt(y.median(), unit)} "
                         f"(median difference "
                         f"{fmt(float(np.median(diff)), 'pp' if unit == '%' else unit, signed=True)})")
    if not rows:
        raise Missing(f"{_named(c, c.metric)} or {_named(c, than)} missing for {' or '.join(c.a)}")
    verdict, why = family_verdict(c, rows)
    if verdict == NO_DIFFERENCE and all(r["exact"] for r in rows) and c.band_range:
        verdict = NOT_REPRODUCED
    return verdict, why, "; ".join(texts)


def _abs_ci(diff: np.ndarray) -> tuple[float, float] | None:
    """Interval of |median difference|: exact for identical rounds, else the median's."""
    if len(diff) >= 2 and diff.min() == diff.max():
        v = abs(float(diff[0]))
        return v, v
    ci = median_ci(diff)
    if ci is None:
        return None
    lo, hi = ci
    if lo <= 0 <= hi:
        return 0.0, max(abs(lo), abs(hi))
    return min(abs(lo), abs(hi)), max(abs(lo), abs(hi))


def value(c: Claim, groups: Groups, _s: pd.DataFrame) -> tuple[str, str, str]:
    """One filesystem's metric against a constant (`than`) and/or about `size`."""
    verdicts, texts = [], []
    for where, g in groups:
        unit = _unit(g, c)
        for a in c.a:
            x = series(g, a, c.metric, c.per)
            if x.empty:
                continue
            head = f"{where + ': ' if where else ''}{a} {fmt(float(x.median()), unit)}"
            texts.append(head + (f" (median of {len(x)})" if len(x) > 1 else " (one round)"))
            verdicts.append(_value_verdict(c, x.to_numpy(), unit))
    if not verdicts:
        raise Missing(f"no {_named(c, c.metric)} for {' or '.join(c.a)} in this run")
    worst = next((v for v in verdicts if v[0] != HOLDS), verdicts[0])
    return worst[0], worst[1], "; ".join(texts)


def _than(c: Claim) -> str:
    """The metric a change claim (and a pull-0 tolerance) sets against its own."""
    if c.than_metric is None:
        raise ValueError(f"{c.study}: {c.claim!r} has no than_metric to compare with")
    return c.than_metric


def _value_verdict(c: Claim, x: np.ndarray, unit: str) -> tuple[str, str]:
    ci: tuple[float, float] | None
    exact = len(x) >= 2 and x.min() == x.max()
    if exact:
        ci, how = (float(x[0]), float(x[0])), "identical in every round: judged as a number"
    else:
        ci = median_ci(x)
        how = "95% interval of the median"
        if ci is None:
            reading = f"; the study's own single-run reading here: {_reading(c, x, unit)}" \
                if len(x) == 1 else ""
            return UNDECIDED, (f"{len(x)} round{'s' if len(x) != 1 else ''}: an interval of the "
                               f"median needs 6 (-n 6){reading}")
    lo, hi = ci
    shown = fmt(lo, unit) if exact else f"{fmt(lo, unit)}–{fmt(hi, unit)}"
    if c.than is not None:
        side_ok = hi < c.than if c.less else lo > c.than
        side_bad = lo >= c.than if c.less else hi <= c.than
        word = "below" if c.less else "above"
        if not side_ok:
            if exact or side_bad:
                return (NOT_REPRODUCED if exact else REVERSED,
                        f"{shown} here, not {word} {fmt(c.than, unit)} ({how})")
            return NO_DIFFERENCE, f"{shown} reaches {fmt(c.than, unit)} ({how})"
    band = c.band_range
    if band is None:
        return HOLDS, f"{shown} ({how})"
    blo, bhi = band
    words = f"the band {fmt(blo, unit)}–{fmt(bhi, unit)} around the study's {fmt(c.size, unit)}"
    if blo <= lo and hi <= bhi:
        return HOLDS, f"{shown} inside {words} ({how})"
    if hi < blo or lo > bhi:
        if c.than is not None:
            return SIZE_DIFFERS, f"{shown} here, outside {words} ({how})"
        return NOT_REPRODUCED, f"{shown} outside {words} ({how})"
    return UNDECIDED, f"{shown} partly outside {words} ({how}); more rounds narrow it"


def _reading(c: Claim, x: np.ndarray, unit: str) -> str:
    """One value against the claim's threshold and band, as a single run reads it."""
    v = float(x[0])
    parts = [fmt(v, unit)]
    if c.than is not None:
        side = v < c.than if c.less else v > c.than
        parts.append(f"{'' if side else 'not '}{'below' if c.less else 'above'} {fmt(c.than, unit)}")
    band = c.band_range
    if band:
        inside = band[0] <= v <= band[1]
        parts.append(f"{'inside' if inside else 'outside'} the band {fmt(band[0], unit)}–"
                     f"{fmt(band[1], unit)} around the study's "
                     f"{fmt(c.size or float(np.sqrt(band[0] * band[1])), unit)}")
    return ", ".join(parts)


def equal(c: Claim, groups: Groups, s: pd.DataFrame) -> tuple[str, str, str]:
    """Equivalence within ±tolerance, by two one-sided tests on the per-round differences
    (TOST at ALPHA: equal when the 90% interval of the mean difference is inside)."""
    verdicts, texts = [], []
    for where, g in groups:
        unit = _unit(g, c)
        du = "pp" if unit == "%" else unit
        for a in c.a:
            x = series(g, a, c.metric)
            if c.than_metric:
                y, head, other = (series(g, a, c.than_metric), f"{a}: {_named(c, c.metric)}",
                                  _named(c, c.than_metric))
            elif c.b:
                y, head, other = series(g, c.b[0], c.metric), a, c.b[0]
            else:
                y = pd.Series(c.than, index=x.index, dtype=float)
                head, other = a, "the study's"
            both = pd.concat([x, y], axis=1, join="inner").dropna()
            if both.empty:
                continue
            d = (both.iloc[:, 0] - both.iloc[:, 1]).to_numpy()
            tol = _tolerance(c, s, a)
            texts.append(f"{where + ': ' if where else ''}{head} {fmt(float(both.iloc[:, 0].median()), unit)}"
                         f" vs {other} {fmt(float(both.iloc[:, 1].median()), unit)} (difference "
                         f"{fmt(float(np.median(d)), du, signed=True)}; tolerance ±{fmt(tol, du)})")
            verdicts.append(_equal_verdict(d, tol, du))
    if not verdicts:
        raise Missing(f"{_named(c, c.metric)} missing for {' or '.join(c.a)}")
    worst = next((v for v in verdicts if v[0] != HOLDS), verdicts[0])
    return worst[0], worst[1], "; ".join(texts)


def _tolerance(c: Claim, s: pd.DataFrame, a: str) -> float:
    if c.tolerance_from == "pull0":
        # the study's noise floor: the aged-minus-unaged difference at pull 0, both fresh, of
        # the claim's own history (series() sums a round's rows: churn's would add in)
        g = s[s["params"].map(lambda p: '"step":0' in p.replace(" ", ""))]
        if c.cases:
            g = g[g["case"].isin(c.cases)]
        x, y = series(g, a, c.metric), series(g, a, _than(c))
        both = pd.concat([x, y], axis=1, join="inner").dropna()
        if both.empty:
            raise Missing(f"no pull-0 grep of {a} (the noise floor) in this run")
        return float((both.iloc[:, 0] - both.iloc[:, 1]).abs().median())
    return float(c.tolerance or 0.0)


def _equal_verdict(d: np.ndarray, tol: float, unit: str) -> tuple[str, str]:
    if len(d) >= 2 and d.min() == d.max():
        if abs(d[0]) <= tol:
            return HOLDS, f"identical in every round: {fmt(float(d[0]), unit, signed=True)}, within ±{fmt(tol, unit)}"
        return NOT_REPRODUCED, (f"identical in every round: {fmt(float(d[0]), unit, signed=True)}, "
                                f"beyond ±{fmt(tol, unit)}")
    if len(d) < 2:
        where = "within" if abs(d[0]) <= tol else "beyond"
        return UNDECIDED, (f"one round: no test (the study's own single-run reading here: "
                           f"{fmt(float(d[0]), unit, signed=True)}, {where} ±{fmt(tol, unit)})")
    p, (lo, hi) = tost(d, tol)
    interval = f"90% CI of the mean difference {fmt(lo, unit)} to {fmt(hi, unit)}"
    if p < ALPHA:
        return HOLDS, f"equal within ±{fmt(tol, unit)} (two one-sided t-tests p = {p:.3g}; {interval})"
    if hi < -tol or lo > tol:
        return NOT_REPRODUCED, f"the difference exceeds ±{fmt(tol, unit)} ({interval})"
    return UNDECIDED, (f"neither equal within ±{fmt(tol, unit)} nor beyond it (two one-sided "
                       f"t-tests p = {p:.3g}; {interval}); more rounds can decide")


KINDS = {"order": order, "change": change, "value": value, "equal": equal}
