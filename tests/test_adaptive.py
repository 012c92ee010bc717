"""Adaptive rounds judge every quantity a case measured, even records that name their own
case or params (S3's tasks, a job file's jobs), and never call an unjudged case converged."""
from __future__ import annotations

import time

from fslab import plan as plans
from fslab.run.adaptive import AdaptiveRounds
from fslab.records import Measurement, UnitKey, canonical_params, stamp
from fslab.run.schedule import Schedule
from fslab.store import open_store

PLAN = """
[run]
profile = "smoke"
iterations = 3
adaptive = true
target_ci = 0.05
[[filesystem]]
name = "ext4"
[[filesystem]]
name = "xfs"
[[suite]]
kind = "tasks"
[[suite]]
kind = "features"
"""


def _store_with(tmp_path, task_values: dict[str, list[float]]):
    p = plans.parse(PLAN)
    pairs = Schedule.of(p).pairs
    store = open_store(tmp_path)
    run_id = store.create_run(PLAN, {}, profile="smoke")
    for spec, suite, case in pairs:
        if suite.name != "tasks":
            continue
        for it, value in enumerate(task_values[spec.name], 1):
            key = UnitKey("localhost", spec.name, spec.variant, suite.name, case.name,
                          canonical_params(case.params), it)
            rel = f"runs/{run_id}/{spec.name}/tasks/iter-{it:03d}"
            # each task is its own case in the records, as the tasks suite writes them
            ms = [Measurement("elapsed", v, "s", "lower", f"{rel}/{task}.log", case=task)
                  for task, v in (("04-copy-iso", value), ("09-ls", 1.0))]
            store.finish_unit(run_id, key, [stamp(key, run_id, m) for m in ms], "done", None,
                              time.time(), rel)
    return AdaptiveRounds(p, pairs, store, run_id)


def test_records_with_their_own_case_count_towards_their_units_case(tmp_path):
    noisy = _store_with(tmp_path, {"ext4": [10.0, 20.0, 30.0], "xfs": [10.0, 10.1, 10.2]})
    wide = noisy.still_wide()
    assert {s.name for _, s, _ in wide} == {"tasks"}     # the tasks case gets another round
    (case,) = [c for c in noisy.widths]
    assert noisy.widths[case][1] == "ext4 04-copy-iso elapsed"
    line = noisy.describe(wide, 4)
    assert line.startswith("adaptive: round 4 for 1 of 9 cases")   # tasks + 8 feature probes


def test_a_case_with_nothing_to_judge_is_never_called_converged(tmp_path):
    steady = _store_with(tmp_path, {"ext4": [10.0, 10.0, 10.01], "xfs": [5.0, 5.0, 5.01]})
    assert steady.still_wide() == []
    line = steady.describe([], 4)
    assert "1 of 9 cases' 95% CI is within ±5.0% after 3 rounds" in line
    assert line.endswith("not assessed (no ranked throughput, time or latency): features (all 8 cases)")
    steady.save()
    env = steady.store.run(steady.run_id)["environment"]["adaptive"]
    assessed = {k.split()[0]: v for k, v in env["cases"].items()}
    assert assessed["tasks"]["converged"] and assessed["features"]["assessed"] is False
    assert not assessed["features"]["converged"] and "false-positive" in env["caveat"]
