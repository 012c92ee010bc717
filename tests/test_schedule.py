"""A plan is expanded once (fslab/run/schedule.py) and the expansion means what the stores
already hold: the unit keys, their params JSON and their order for a seed are those of the
definition below (every fs variant × every case its suites give at the plan's profile, in
plan order, each round drawn by random.Random("SEED:ROUND"): the cases shuffled, then each
case's filesystems shuffled and run back to back, or with `order = "spread"` every unit
shuffled), for every shipped plan at
every profile, CLI plans and job files; and a run resumed from its stored plan text finds
the same units in the same order."""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from fslab import filesystems, plan as plans, workloads
from fslab.run.flags import from_flags
from fslab.records import canonical_params
from fslab.run.dryrun import outline
from fslab.run.schedule import Schedule

REPO = Path(__file__).resolve().parent.parent
SHIPPED = sorted(p for p in (REPO / "plans").glob("*.toml") if p.name != "hosts.example.toml")
JOBS = REPO / "examples" / "jobs"


def reference_keys(plan, host: str) -> list[tuple]:
    """The units of the plan's fixed rounds as the scheduler always drew them, built from
    the suites' and drivers' public methods alone."""
    pairs = []
    for spec in plan.filesystem:
        driver = filesystems.get(spec.name)
        for sspec in plan.suite:
            suite = workloads.get(sspec.kind)
            if suite.supports(driver):
                continue
            for case in suite.cases(sspec.at_profile(plan.profile.name), plan.profile):
                if not suite.refuses(case, driver, spec.label):
                    pairs.append((spec, suite, case))
    keys = []
    for it in range(1, plan.iterations + 1):
        order = drawn(plan, pairs, it)
        keys += [(host, spec.name, spec.variant, suite.name, case.name,
                  canonical_params(case.params), it) for spec, suite, case in order]
    return keys


def drawn(plan, pairs: list, it: int) -> list:
    """One round's order, by its definition."""
    rng = random.Random(f"{plan.run.seed}:{it}")
    if plan.order == "spread":
        order = list(pairs)
        rng.shuffle(order)
        return order
    cases = list(dict.fromkeys((su.name, c.name, canonical_params(c.params))
                               for _, su, c in pairs))
    rng.shuffle(cases)
    order = []
    for key in cases:
        group = [p for p in pairs if (p[1].name, p[2].name, canonical_params(p[2].params)) == key]
        rng.shuffle(group)
        order += group
    return order


def keys_of(schedule: Schedule, host: str) -> list[tuple]:
    return [(u.key.host, u.key.fs, u.key.variant, u.key.suite, u.key.case, u.key.params,
             u.key.iteration) for u in schedule.units(host)]


def flags_plan(plan_file=None, fs=None, suite=None, profile=None, iterations=None, seed=None,
               fio=(), job=(), image_size=None, page_cache=None, baseline=None):
    return from_flags(plan_file, fs, suite, profile, iterations, seed, list(fio), None, None,
                      False, tuple(job), image_size, page_cache, baseline)


SHIPPED_CASES = [pytest.param(dict(plan_file=str(p), profile=prof), id=f"{p.stem}-{prof}")
                 for p in SHIPPED for prof in ("smoke", "quick", "paper")]
CLI_CASES = [
    pytest.param(dict(fs="ext4,xfs,btrfs", suite="fio", profile="smoke", iterations=3, seed=7,
                      fio=["bs=8k"]), id="cli-fio"),
    pytest.param(dict(fs="ext4,ext4:nobar[-o nobarrier],xfs", suite="fio,tasks,capacity",
                      iterations=2, page_cache="on", baseline="raw"), id="cli-variants"),
]
JOB_CASES = [
    pytest.param(dict(fs="ext4,xfs", profile="smoke", iterations=3, seed=5,
                      job=[JOBS / "random-read.fio", JOBS / "mixed-randrw.fio"]), id="jobs"),
    pytest.param(dict(fs="ext4,btrfs", job=[JOBS / "sequential-read.fio"], image_size="512M",
                      fio=["runtime=1"]), id="job-as-written"),
]


@pytest.mark.parametrize("flags", [*SHIPPED_CASES, *CLI_CASES, *JOB_CASES])
def test_the_schedule_is_the_units_the_stores_hold(flags):
    if flags.get("job") and shutil.which("fio") is None:
        pytest.skip("job files are validated by fio")
    p = flags_plan(**flags)
    schedule = Schedule.of(p)
    assert keys_of(schedule, "elsewhere") == reference_keys(p, "elsewhere")
    # a resumed run reads the stored plan text: the same units, in the same order
    stored = plans.parse(p.source_text, "stored")
    assert keys_of(Schedule.of(stored), "elsewhere") == keys_of(schedule, "elsewhere")
    # the dry run shows exactly one round of the schedule
    o = outline(p, schedule=schedule)
    assert [(c["filesystem"], c["suite"], c["case"], canonical_params(c["params"]))
            for c in o["cases"]] == [(s.label, su.name, c.name, canonical_params(c.params))
                                     for s, su, c in schedule.pairs]
    assert o["units"] == len(schedule.units())


@pytest.mark.parametrize("seed", [0, 1, 42, 2**31 + 5])
@pytest.mark.parametrize("rounds", [1, 2, 5])
def test_every_round_runs_every_pair_once_in_its_seeds_order(seed, rounds):
    p = flags_plan(fs="ext4,xfs,btrfs,zfs", suite="fio,smallfiles", profile="smoke",
                   iterations=rounds, seed=seed)
    schedule = Schedule.of(p)
    units = schedule.units()
    assert len(units) == rounds * len(schedule.pairs)
    one_round = sorted((s.label, su.name, c.name, canonical_params(c.params))
                       for s, su, c in schedule.pairs)
    for it in range(1, rounds + 1):
        rnd = [u for u in units if u.key.iteration == it]
        assert sorted((u.spec.label, u.suite.name, u.case.name, u.key.params) for u in rnd) == \
            one_round
        assert rnd == schedule.round(it)          # the same round, asked again
    # a race's later rounds of some pairs keep the same seeded draw
    some = schedule.pairs[::2]
    order = drawn(p, some, rounds + 1)
    assert [(u.spec, u.case) for u in schedule.round(rounds + 1, some)] == \
        [(s, c) for s, _, c in order]


def test_the_plan_is_frozen_after_the_flags():
    import pydantic
    p = flags_plan(fs="ext4,xfs", suite="fio", profile="smoke", iterations=1, baseline="raw")
    for edit in (lambda: setattr(p, "filesystem", []), lambda: setattr(p.run, "seed", 1),
                 lambda: setattr(p.filesystem[0], "image_size", "1G"),
                 lambda: setattr(p.suite[0], "kind", "tasks")):
        with pytest.raises(pydantic.ValidationError, match="frozen"):
            edit()
    # its stored text was written once, from the plan as built (raw included)
    assert plans.parse(p.source_text).model_dump() == p.model_dump()


def test_what_a_host_cannot_make_is_a_new_schedule_not_an_edit():
    p = flags_plan(fs="ext4,xfs", suite="fio", profile="smoke", iterations=1)
    schedule = Schedule.of(p)
    here = schedule.here()
    assert here is not schedule and len(schedule.pairs) == 2 * 7
    assert all(pair in schedule.pairs for pair in here.pairs)


def test_the_smallest_image_is_the_one_the_dry_run_shows_the_units_make():
    """What the options probe sizes its scratch image by (fslab/run/probe.py): the smallest
    image any unit of the plan makes the filesystem on, never below what its mkfs takes;
    --image-size on the filesystem wins."""
    p = flags_plan(fs="ext4,xfs", suite="fio", profile="smoke", iterations=1)
    schedule = Schedule.of(p)
    shown = {}
    for c in outline(p, schedule=schedule)["cases"]:
        shown.setdefault(c["filesystem"], []).append(c["image_bytes"])
    for spec in p.filesystem:
        assert schedule.smallest_image(spec) == min(shown[spec.label])
        assert schedule.smallest_image(spec) >= filesystems.get(spec.name).min_bytes
    big = p.filesystem[1].model_copy(update={"image_size": "2G"})
    assert schedule.smallest_image(big) == 2 << 30


def test_the_options_probe_reads_the_sessions_expansion(monkeypatch):
    """The probe sizes its images from the run's one expansion (the session's schedule),
    never expanding the plan again (it did, in probe_plan)."""
    from fslab.run import probe
    p = flags_plan(fs="ext4,ext4:lazy[-m '-E lazy_itable_init=1']", suite="fio",
                   profile="smoke", iterations=1)
    schedule = Schedule.of(p)

    def expanded_again(*a, **kw):
        raise AssertionError("the plan was expanded again")
    monkeypatch.setattr(Schedule, "of", expanded_again)
    size = probe.probe_sizes(p, schedule)
    assert size(p.filesystem[1]) == schedule.smallest_image(p.filesystem[1])
    # no variant this driver probes (or none available): nothing probed, nothing expanded
    monkeypatch.setattr(probe, "has_own_options", lambda spec: False)
    assert probe.probe_plan(schedule, print) == {}
