"""A study's claims as data (fslab/data/claims/*.toml): what each claim compares and how.

Kinds (see the header of fslab/data/claims/s3.toml for the keys):
  order   a's metric is lower (less = true) or higher than b's; a and b may be lists
          (every a against every b), a sweep of params, or several cases: one family
  change  on one filesystem, metric is lower/higher than than_metric (paired by round)
  value   a's metric is below/above the constant `than`, or about `size`
  equal   a's metric equals than_metric / the constant `than` / b's metric within
          `tolerance` (units of the metric): two one-sided tests
Size ("about 100x", "about half"): `size` is the published figure (order: the ratio of the
slower to the faster in the claimed direction; change: the difference; value: the value),
`band` the factor it may be off by (or `size_range` = [lo, hi]); an order claim's band starts
no lower than sqrt(size), so "about 1.5x faster" never accepts 1.05x.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources


@dataclass(frozen=True)
class Claim:
    study: str
    claim: str
    published: str
    kind: str                            # order | change | value | equal
    suite: str
    metric: str
    a: list[str]
    b: list[str] = field(default_factory=list)
    cases: list[str] = field(default_factory=list)   # empty: any case of the suite
    combine: str = "each"                # each: a comparison per case; sum: per round, summed
    params: dict[str, str] = field(default_factory=dict)   # "max": the largest value run
    less: bool = True
    than: float | None = None
    than_metric: str | None = None
    per: str | None = None               # metric / per (ops per CPU %), per round
    size: float | None = None
    band: float = 2.0
    size_range: list[float] | None = None
    tolerance: float | None = None       # equal: the largest difference that is "equal"
    tolerance_from: str | None = None    # equal: "pull0": the run's own pull-0 difference
    share: float = 1.0                   # of the family's comparisons, for "holds"
    about: str = "performance"           # "space": holds for any ZFS implementation
    scaled: bool = True                  # false: no profile scales what it compares (20 GB mkfs)
    missing: str = ""                    # said when a filesystem of the claim was not run
    plan: str = ""                       # study applies only to runs of a plan named so

    @property
    def filesystems(self) -> list[str]:
        return [*self.a, *[x for x in self.b if x not in self.a]]

    @property
    def band_range(self) -> tuple[float, float] | None:
        if self.size_range:
            return float(self.size_range[0]), float(self.size_range[1])
        if self.size is None:
            return None
        lo, hi = sorted((self.size / self.band, self.size * self.band))
        if self.kind == "order" and self.size > 1:
            # "N x faster" excludes no difference: a ratio nearer 1 than N (on a log scale)
            # is not "about N x", so the band starts no lower than sqrt(N)
            lo = max(lo, self.size ** 0.5)
        return lo, hi


def _as_list(x: object) -> list[str]:
    if x is None:
        return []
    return [str(v) for v in x] if isinstance(x, list) else [str(x)]


def parse(doc: dict) -> list[Claim]:
    """The claims of one study file."""
    out = []
    for c in doc.get("claim", []):
        c = dict(c)
        case = c.pop("case", None)
        cases = _as_list(c.pop("cases", None)) or _as_list(case)
        params = {k: str(v) for k, v in (c.pop("params", None) or {}).items()}
        out.append(Claim(study=doc["study"], suite=c.pop("suite", doc.get("suite", "")),
                         a=_as_list(c.pop("a")), b=_as_list(c.pop("b", None)), cases=cases,
                         params=params, plan=doc.get("plan", ""), **c))
    return out


def load_claims() -> list[Claim]:
    """Every study's claims, in file order (S0, S1, ...)."""
    out = []
    folder = resources.files("fslab") / "data" / "claims"
    for f in sorted(folder.iterdir(), key=lambda p: p.name):
        if f.name.endswith(".toml"):
            out += parse(tomllib.loads(f.read_text()))
    return out
