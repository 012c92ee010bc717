""""The study said -> here": each reference study's conclusions, re-derived from a run.

The claims are data (fslab/data/claims/*.toml, one file per study, taken from
docs/studies.md): a sentence, the published numbers, and the one comparison
that tests it. A study's claims are shown for a run that has records of the
study's suites. Each claim gets this run's measurement and a verdict:

  holds                      the run shows the claimed direction, significantly
  reversed                   the run shows the opposite direction, significantly
  no significant difference  neither (the reason says when too few rounds were run
                             for any test to decide, and which profile can)
  not comparable             a filesystem was not run, the study's case was not run
                             at this profile, or ZFS here is zfs-fuse (a FUSE daemon)
                             and the claim is about speed or CPU of the kernel ZFS

Tests: two filesystems, Mann-Whitney U (two-sided, exact); one filesystem
against a constant or two of its own metrics (paired by round), a sign test.
Values identical in every round (capacity after mkfs) have no sampling noise:
a difference between them is decisive. One test per claim at alpha 0.05, not
corrected for the number of claims: a claim is a question the study asked.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources

import orjson
import pandas as pd

from fslab.report.format import human, number

ALPHA = 0.05
VERDICTS = ("holds", "reversed", "no significant difference", "not comparable")


@dataclass
class Claim:
    study: str
    claim: str
    published: str
    kind: str                 # order | change | value
    suite: str
    metric: str
    a: str                    # filesystem label ("ext4", "zfs:dedup")
    b: str | None = None      # order: the other filesystem
    case: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    less: bool = True         # a's metric is lower than b's / than_metric's / than
    same: bool = False        # change: within `tolerance` of than_metric
    tolerance: float = 0.0
    than: float | None = None           # value: the constant
    than_metric: str | None = None      # change: the other metric
    about: str = "performance"          # "space": holds for any ZFS implementation

    @property
    def filesystems(self) -> list[str]:
        return [x for x in (self.a, self.b) if x]


def load_claims() -> list[Claim]:
    """Every study's claims, in file order (S0, S1, ...)."""
    out = []
    folder = resources.files("fslab") / "data" / "claims"
    for f in sorted(folder.iterdir(), key=lambda p: p.name):
        if not f.name.endswith(".toml"):
            continue
        doc = tomllib.loads(f.read_text())
        for c in doc.get("claim", []):
            c = {**c, "params": {k: str(v) for k, v in (c.get("params") or {}).items()}}
            out.append(Claim(study=doc["study"], suite=c.pop("suite", doc["suite"]), **c))
    return out


def claims_json(run: dict | None, records: pd.DataFrame) -> list[dict]:
    """The report --json "claims" key: [{study, claim, published, measured, verdict, why}]."""
    return evaluate(records, (run or {}).get("environment") or {})


def evaluate(records: pd.DataFrame, environment: dict) -> list[dict]:
    """Every applicable claim with this run's measurement and verdict."""
    if records.empty:
        return []
    recs = records.copy()
    recs["label"] = [f if v == "default" else f"{f}:{v}" for f, v in zip(recs["fs"], recs["variant"])]
    claims = load_claims()
    studies = {c.study for c in claims if _applies(c, recs)}
    return [_judge(c, recs, environment) for c in claims if c.study in studies]


def _applies(c: Claim, recs: pd.DataFrame) -> bool:
    s = recs[recs["suite"] == c.suite]
    return not s.empty and (c.case is None or (s["case"] == c.case).any())


def _row(c: Claim, measured: str, verdict: str, why: str) -> dict:
    return {"study": c.study, "claim": c.claim, "published": c.published, "measured": measured,
            "verdict": verdict, "why": why}


def _judge(c: Claim, recs: pd.DataFrame, env: dict) -> dict:
    s = recs[(recs["suite"] == c.suite) & recs["metric"].isin([c.metric, c.than_metric])]
    if c.case is not None:
        s = s[s["case"] == c.case]
    missing = [fs for fs in c.filesystems if fs not in set(recs["label"])]
    if missing:
        return _row(c, "–", "not comparable", f"{' and '.join(missing)} not run")
    s = s[s["label"].isin(c.filesystems)]
    if s.empty:
        where = f"{c.suite}/{c.case}" if c.case else c.suite
        return _row(c, "–", "not comparable", f"no {c.metric} of {where} in this run")
    groups = _by_params(s, c.params)
    if not groups:
        wanted = ", ".join(f"{k}={v}" for k, v in c.params.items())
        return _row(c, "–", "not comparable", f"the study's point ({wanted}) was not run at this "
                    "profile")
    results = [(label, *_decide(c, g)) for label, g in groups]
    measured = "; ".join(f"{label}: {m}" if label else m for label, m, _, _ in results)
    verdicts = [v for _, _, v, _ in results]
    decided = {v for v in verdicts if v != "no significant difference"}
    if len(decided) == 1 and len(results) == 1:
        verdict, why = verdicts[0], results[0][3]
    elif len(decided) == 1:
        verdict = decided.pop()
        why = f"{verdicts.count(verdict)} of {len(verdicts)} points; " + results[0][3]
    elif decided:
        verdict = "no significant difference"
        why = ", ".join(f"{v} at {verdicts.count(v)}" for v in sorted(decided)) + " of the points"
    else:
        verdict, why = "no significant difference", results[0][3]
    notes = _caveats(c, env)
    if notes.get("implementation") and verdict != "not comparable":
        why = f"{notes['implementation']}; measured here: {verdict} ({why})"
        verdict = "not comparable"
    if notes.get("profile"):
        why = f"{why}; {notes['profile']}"
    return _row(c, measured, verdict, why)


def _by_params(s: pd.DataFrame, wanted: dict[str, str]) -> list[tuple[str, pd.DataFrame]]:
    """The records split by their params (a sweep point each), keeping the claim's point."""
    out = []
    for params, g in s.groupby("params", sort=False):
        p = {k: str(v) for k, v in orjson.loads(params or "{}").items()}
        if any(p.get(k) != v for k, v in wanted.items()):
            continue
        shown = {k: v for k, v in p.items() if k not in wanted and k != "workload"}
        out.append((", ".join(f"{k}={v}" for k, v in shown.items()), g))
    return out


def _values(g: pd.DataFrame, label: str, metric: str) -> pd.Series:
    """One value per round (summed over a case's jobs, as fio's group_reporting would)."""
    x = g[(g["label"] == label) & (g["metric"] == metric)]
    return x.groupby("iteration")["value"].sum() if not x.empty else pd.Series(dtype=float)


def _decide(c: Claim, g: pd.DataFrame) -> tuple[str, str, str]:
    """(measured text, verdict, why) of one claim on one sweep point."""
    unit = str(g[g["metric"] == c.metric]["unit"].iloc[0]) if (g["metric"] == c.metric).any() else ""
    a = _values(g, c.a, c.metric)
    if c.kind == "order":
        b = _values(g, c.b, c.metric)
        if a.empty or b.empty:
            return "–", "not comparable", f"{c.metric} missing for {c.a if a.empty else c.b}"
        measured = (f"{c.a} {_fmt(a.median(), unit)}, {c.b} {_fmt(b.median(), unit)} "
                    f"(medians of {len(a)}/{len(b)}; means {_fmt(a.mean(), unit)}, "
                    f"{_fmt(b.mean(), unit)})")
        return (measured, *_two_sample(a.to_numpy(), b.to_numpy(), c.less))
    if c.kind == "change":
        other = _values(g, c.a, c.than_metric)
        paired = pd.concat([a, other], axis=1, join="inner").dropna()
        if paired.empty:
            return "–", "not comparable", f"{c.metric} or {c.than_metric} missing for {c.a}"
        diff = (paired.iloc[:, 0] - paired.iloc[:, 1]).to_numpy()
        measured = (f"{c.a}: {c.metric} {_fmt(paired.iloc[:, 0].median(), unit)} vs "
                    f"{c.than_metric} {_fmt(paired.iloc[:, 1].median(), unit)} "
                    f"(median difference {_fmt(float(pd.Series(diff).median()), unit, signed=True)})")
        if c.same:
            within = bool((abs(diff) <= c.tolerance).all())
            if within:
                return measured, "holds", f"every round within {c.tolerance:g} of it"
            return (measured, *_one_sample(diff, 0.0, less=float(pd.Series(diff).median()) < 0,
                                           inverse=True))
        return (measured, *_one_sample(diff, 0.0, c.less))
    if a.empty:
        return "–", "not comparable", f"{c.metric} missing for {c.a}"
    measured = (f"{c.a} {_fmt(a.median(), unit)} (median of {len(a)}; mean {_fmt(a.mean(), unit)}; "
                f"claim: {'below' if c.less else 'above'} {_fmt(c.than, unit)})")
    return (measured, *_one_sample(a.to_numpy() - c.than, 0.0, c.less))


def _two_sample(a, b, less: bool) -> tuple[str, str]:
    from scipy.stats import mannwhitneyu
    observed_less = float(pd.Series(a).median()) < float(pd.Series(b).median())
    if len(a) >= 2 and len(b) >= 2 and a.min() == a.max() and b.min() == b.max():
        if a[0] == b[0]:
            return "no significant difference", "the same value in every round"
        return _direction(observed_less == less), "the same values in every round (no noise)"
    if len(a) < 2 or len(b) < 2:
        return "no significant difference", _too_few(len(a), len(b))
    p = float(mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue)
    if p < ALPHA:
        return _direction(observed_less == less), f"Mann-Whitney p = {p:.3g}"
    least = _least_p(len(a), len(b))
    if least >= ALPHA:
        return "no significant difference", _too_few(len(a), len(b))
    return "no significant difference", f"Mann-Whitney p = {p:.2g}"


def _one_sample(x, null: float, less: bool, inverse: bool = False) -> tuple[str, str]:
    """Sign test of x against `null`; inverse: the claim was "no change", so a significant
    change in either direction reverses it."""
    n = len(x)
    below, above = int((x < null).sum()), int((x > null).sum())
    if n >= 2 and x.min() == x.max():
        if x[0] == null:
            return ("holds" if inverse else "no significant difference"), "the same value in every round"
        return ("reversed" if inverse else _direction((x[0] < null) == less)), \
            "the same value in every round (no noise)"
    from scipy.stats import binomtest
    k = max(below, above)
    if below + above == 0:
        return ("holds" if inverse else "no significant difference"), "no difference in any round"
    p = float(binomtest(k, below + above, 0.5).pvalue)
    if p < ALPHA:
        if inverse:
            return "reversed", f"sign test p = {p:.3g}"
        return _direction((below > above) == less), f"sign test p = {p:.3g}"
    if 2 * 0.5 ** n >= ALPHA:
        return ("no significant difference",
                f"{n} rounds: a sign test cannot reach p < {ALPHA} below 6; run more iterations")
    return "no significant difference", f"sign test p = {p:.2g}"


def _direction(as_claimed: bool) -> str:
    return "holds" if as_claimed else "reversed"


def _least_p(n1: int, n2: int) -> float:
    """The smallest two-sided exact Mann-Whitney p with n1 and n2 rounds."""
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def _too_few(n1: int, n2: int) -> str:
    return (f"{n1}+{n2} rounds: too few for any verdict (the smallest possible p is "
            f"{_least_p(n1, n2):.2g}); 5 rounds per filesystem (--profile quick, or -n 5) can decide")


def _caveats(c: Claim, env: dict) -> dict[str, str]:
    out = {}
    impl = " ".join(str(v) for k, v in env.items() if k.endswith("implementation"))
    if "zfs-fuse" in impl and c.about != "space" and any(fs.startswith("zfs") for fs in c.filesystems):
        out["implementation"] = ("ZFS here is zfs-fuse (a FUSE daemon), not the kernel ZFS the "
                                 "study ran: its speed and CPU say nothing about that one")
    prof = env.get("profile") or {}
    if prof.get("scaled"):
        out["profile"] = (f"profile {prof.get('name')} scales the study's sizes and durations "
                          f"down, so the published numbers are not this run's")
    return out


def _fmt(v: float | None, unit: str, signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    sign = "+" if signed and v > 0 else ""
    if unit == "%":   # the studies' capacity findings differ by 0.01-0.02 %
        return f"{sign}{v:.2f}%"
    if unit in ("ratio", "count", "") or unit not in ("s", "B", "B/s", "ns", "ops/s"):
        return f"{sign}{number(v)}{('x' if unit == 'ratio' else (' ' + unit if unit else ''))}"
    return sign + human(float(v), unit)


# --- views ---------------------------------------------------------------------------------

def print_claims(rows: list[dict], console) -> None:
    """The terminal section, one line per claim, grouped by study."""
    from rich.markup import escape
    if not rows:
        return
    colour = {"holds": "green", "reversed": "red", "no significant difference": "yellow",
              "not comparable": "dim"}
    study = None
    for r in rows:
        if r["study"] != study:
            study = r["study"]
            console.print(f"\n[bold]The study said → here ({study})[/]")
        console.print(f"  [{colour[r['verdict']]}]{r['verdict']:>25}[/]  {escape(r['claim'])}")
        console.print(f"  {'':>25}  [dim]study: {escape(r['published'])} · here: "
                      f"{escape(r['measured'])} · {escape(r['why'])}[/dim]")


def markdown(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    lines = ["## The study said → here", "",
             "| study | claim | published | measured here | verdict | why |",
             "|---|---|---|---|---|---|"]
    cell = lambda t: str(t).replace("|", "\\|")
    lines += [f"| {r['study']} | {cell(r['claim'])} | {cell(r['published'])} | {cell(r['measured'])} "
              f"| **{r['verdict']}** | {cell(r['why'])} |" for r in rows]
    return lines + [""]
