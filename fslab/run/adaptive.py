"""Adaptive iterations: more rounds only where the answer is not clear yet.

After a plan's fixed rounds, a case (suite, case, params) gets another round while any
filesystem variant's headline performance metric (a rate, a time or a latency; ranked,
not a tail like *_p99; CPU shares are not what a user waits for) has a 95%
t-interval of the mean wider than ±target_ci of that mean. A round of a case runs on
every filesystem, in the seeded interleaved order, so the filesystems of one case keep
the same rounds (and stay paired by round). It stops at run.max_iterations rounds;
the run's environment records which cases converged and which did not.

A record belongs to the case of the unit that made it (found by its artifact path),
even when it names its own case or params (S3's tasks, a job file's jobs, aging steps):
every quantity a case measured counts towards its width. A case with no ranked
performance record at all is "not assessed" and never reported as converged.

Stopping when the intervals are narrow is a data-dependent rule: in simulations
(12,000 runs) it raised the pairwise tests' false-positive rate from 4.3% (fixed
rounds) to 5.4-5.8%. The run says so once; fixed rounds avoid it.
"""
from __future__ import annotations

import math

from fslab.metrics import is_detail
from fslab.plan import Plan
from fslab.records import canonical_params

PERFORMANCE_UNITS = ("ops/s", "B/s", "s", "ns")
CAVEAT = ("stopping when the CIs are narrow depends on the data: in simulations it raised the "
          "pairwise tests' false-positive rate from 4.3% (fixed rounds) to 5.4-5.8%")


class AdaptiveRounds:
    def __init__(self, plan: Plan, pairs: list, store, run_id: str):
        self.plan, self.pairs, self.store, self.run_id = plan, pairs, store, run_id
        self.target = plan.run.target_ci
        self.widths: dict[tuple, tuple[float, str]] = {}   # case -> (widest CI, where)
        self.rounds: dict[tuple, int] = {}                  # case -> rounds measured

    @staticmethod
    def case_of(pair) -> tuple:
        _, suite, case = pair
        return suite.name, case.name, canonical_params(case.params)

    def still_wide(self) -> list:
        """The pairs of every case whose widest relative CI is above the target (a case
        with nothing to judge gets no more rounds: more would not change that)."""
        self._measure()
        wide = {c for c, (w, _) in self.widths.items() if not w <= self.target}
        return [p for p in self.pairs if self.case_of(p) in wide]

    def _measure(self) -> None:
        """Each case's widest relative CI, from the engine's own description of the run."""
        import numpy as np
        # here, not at the top: pandas and scipy load only when this runs
        from fslab.analysis.describe import describe
        # here, not at the top: pandas and scipy load only when this runs
        from fslab.analysis.groups import FS_FACTOR, with_levels
        records = self.store.records(self.run_id)
        ranked = records[records["better"].isin(["higher", "lower"])
                         & records["unit"].isin(PERFORMANCE_UNITS)
                         & ~records["metric"].map(is_detail)].copy()
        self.widths, self.rounds = {}, {}
        if ranked.empty:
            return
        ranked["plan_case"] = self._plan_cases(ranked["artifact"])
        ranked = ranked.dropna(subset=["plan_case"])
        if ranked.empty:
            return
        d = describe(with_levels(ranked, FS_FACTOR), ["plan_case", "case", "params", "metric"])
        with np.errstate(divide="ignore", invalid="ignore"):
            # half the 95% t-interval over |mean|: 0 for constant values, inf when unknown
            width = np.where(d["sd"] == 0, 0.0,
                             (d["mean_ci_hi"] - d["mean"]) / d["mean"].abs())
        cases = {self.case_of(p) for p in self.pairs}
        for row, w in zip(d.to_dict("records"), width):
            case = row["plan_case"]
            if case not in cases:
                continue
            w = float(w) if np.isfinite(w) else math.inf
            self.rounds[case] = max(self.rounds.get(case, 0), int(row["n"]))
            if case not in self.widths or w > self.widths[case][0]:
                where = row["metric"] if row["case"] == case[1] else f"{row['case']} {row['metric']}"
                self.widths[case] = (w, f"{row['level']} {where}")

    def _plan_cases(self, artifacts):
        """The plan case (suite, case, params) of the unit each record's artifact lies in."""
        from pathlib import PurePosixPath
        by_dir = {u["artifact_dir"]: (u["suite"], u["case"], u["params"])
                  for u in self.store.units(self.run_id) if u.get("artifact_dir")}
        found: dict[str, tuple | None] = {}
        for art in set(artifacts.dropna()):
            path, hit = PurePosixPath(art), None
            for candidate in (path, *path.parents):
                if str(candidate) in by_dir:
                    hit = by_dir[str(candidate)]
                    break
            found[art] = hit
        return artifacts.map(lambda a: found.get(a) if isinstance(a, str) else None)

    def not_assessed(self) -> list[tuple]:
        """Cases of the plan with no ranked performance record to judge."""
        return sorted({self.case_of(p) for p in self.pairs} - set(self.widths))

    def describe(self, wanted: list, it: int) -> str:
        n_cases = len({self.case_of(p) for p in self.pairs})
        wide = {self.case_of(p) for p in wanted}
        if not wide:
            skipped = self.not_assessed()
            if len(skipped) == n_cases:
                return (f"adaptive: no case has a ranked throughput, time or latency to judge; "
                        f"stopped after {it - 1} rounds")
            said = ("; not assessed (no ranked throughput, time or latency): "
                    + _cases_text(skipped, [self.case_of(p) for p in self.pairs])) if skipped else ""
            every = "every case's" if not skipped else f"{n_cases - len(skipped)} of {n_cases} cases'"
            return (f"adaptive: {every} 95% CI is within ±{self.target:.1%} "
                    f"after {it - 1} rounds{said}")
        worst = max((self.widths[c] for c in wide), key=lambda w: w[0])
        return (f"adaptive: round {it} for {len(wide)} of {n_cases} cases "
                f"(widest CI ±{_pct(worst[0])}: {worst[1]}; target ±{self.target:.1%})")

    def save(self) -> None:
        """What adaptivity decided, in the run's environment (shown by the report)."""
        self._measure()
        cases = {" ".join(c[:2]) + ("" if c[2] == "{}" else " " + c[2]):
                 {"rounds": self.rounds.get(c, 0),
                  "widest_ci": None if math.isinf(w) or math.isnan(w) else round(w, 5),
                  "where": where, "converged": bool(w <= self.target)}
                 for c, (w, where) in sorted(self.widths.items())}
        for c in self.not_assessed():
            cases[" ".join(c[:2]) + ("" if c[2] == "{}" else " " + c[2])] = {
                "rounds": self.plan.iterations, "widest_ci": None, "where": None,
                "converged": False, "assessed": False}
        self.store.update_environment(self.run_id, {"adaptive": {
            "target_ci": self.target, "max_iterations": self.plan.run.max_iterations,
            "min_iterations": self.plan.iterations, "cases": cases,
            "caveat": CAVEAT}})


def _pct(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.1%}"


def _cases_text(cases: list[tuple], all_cases: list[tuple]) -> str:
    """'features (all 8 cases), fio randread': a suite none of whose cases counts is named once."""
    out = []
    for suite in dict.fromkeys(c[0] for c in cases):
        mine = [c for c in cases if c[0] == suite]
        total = len({c for c in all_cases if c[0] == suite})
        out += ([f"{suite} (all {total} cases)"] if len(mine) == total and total > 1
                else [" ".join(c[:2]) for c in mine])
    return ", ".join(out)
