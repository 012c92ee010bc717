"""Adaptive iterations: more rounds only where the answer is not clear yet.

After a plan's fixed rounds, a case (suite, case, params) gets another round while any
filesystem variant's headline performance metric (a rate, a time or a latency; ranked,
not a tail like *_p99; CPU shares are not what a user waits for) has a 95%
t-interval of the mean wider than ±target_ci of that mean. A round of a case runs on
every filesystem, in the seeded interleaved order, so the filesystems of one case keep
the same rounds (and stay paired by round). It stops at run.max_iterations rounds;
the run's environment records which cases converged and which did not.
"""
from __future__ import annotations

import math

from fslab.analysis.engine import is_detail
from fslab.plan import Plan

PERFORMANCE_UNITS = ("ops/s", "B/s", "s", "ns")


class AdaptiveRounds:
    def __init__(self, plan: Plan, pairs: list, store, run_id: str):
        self.plan, self.pairs, self.store, self.run_id = plan, pairs, store, run_id
        self.target = plan.run.target_ci
        self.widths: dict[tuple, tuple[float, str]] = {}   # case -> (widest CI, where)
        self.rounds: dict[tuple, int] = {}                  # case -> rounds measured

    @staticmethod
    def case_of(pair) -> tuple:
        from fslab.records import canonical_params
        _, suite, case = pair
        return suite.name, case.name, canonical_params(case.params)

    def still_wide(self) -> list:
        """The pairs of every case whose widest relative CI is above the target."""
        self._measure()
        wide = {c for c, (w, _) in self.widths.items() if not w <= self.target}
        return [p for p in self.pairs if self.case_of(p) in wide]

    def _measure(self) -> None:
        """Each case's widest relative CI, from the engine's own description of the run."""
        import numpy as np
        from fslab.analysis.describe import describe
        from fslab.analysis.groups import FS_FACTOR, with_levels
        records = self.store.records(self.run_id)
        ranked = records[records["better"].isin(["higher", "lower"])
                         & records["unit"].isin(PERFORMANCE_UNITS)
                         & ~records["metric"].map(is_detail)]
        self.widths, self.rounds = {}, {}
        if ranked.empty:
            return
        d = describe(with_levels(ranked, FS_FACTOR), ["suite", "case", "params", "metric"])
        with np.errstate(divide="ignore", invalid="ignore"):
            # half the 95% t-interval over |mean|: 0 for constant values, inf when unknown
            width = np.where(d["sd"] == 0, 0.0,
                             (d["mean_ci_hi"] - d["mean"]) / d["mean"].abs())
        cases = {self.case_of(p) for p in self.pairs}
        for row, w in zip(d.to_dict("records"), width):
            case = (row["suite"], row["case"], row["params"])
            if case not in cases:
                continue
            w = float(w) if np.isfinite(w) else math.inf
            self.rounds[case] = max(self.rounds.get(case, 0), int(row["n"]))
            if case not in self.widths or w > self.widths[case][0]:
                self.widths[case] = (w, f"{row['level']} {row['metric']}")

    def describe(self, wanted: list, it: int) -> str:
        n_cases = len({self.case_of(p) for p in self.pairs})
        wide = {self.case_of(p) for p in wanted}
        if not wide:
            return (f"adaptive: every case's 95% CI is within ±{self.target:.1%} "
                    f"after {it - 1} rounds")
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
        self.store.update_environment(self.run_id, {"adaptive": {
            "target_ci": self.target, "max_iterations": self.plan.run.max_iterations,
            "min_iterations": self.plan.iterations, "cases": cases}})


def _pct(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.1%}"
