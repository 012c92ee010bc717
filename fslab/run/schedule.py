"""A plan expanded once: the (fs variant, suite case) pairs of a round and the units of
every round, in the seeded order the scheduler runs them.

Validation, `--dry-run`, the scheduler, the guest (its data disk), fio hosts and
fslab decide's race all read this one expansion, so they cannot disagree on what a plan
means. Each round runs every pair once, in an order drawn from the plan's seed and the
round number (`random.Random(f"{seed}:{round}")`): no filesystem gets all its iterations
back to back, and a resumed run finds the same unit keys in the same order.

What may change the filesystems after the expansion (which filesystems this host can
make) gives a new Schedule (`here()`); the plan and the schedule are never edited.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, replace

from fslab import filesystems, workloads
from fslab.analysis.significance import rounds_needed
from fslab.filesystems.base import Existing
from fslab.plan import FilesystemSpec, Plan, SuiteSpec
from fslab.records import UnitKey, canonical_params
from fslab.workloads.base import Case, Suite

Pair = tuple[FilesystemSpec, Suite, Case]


@dataclass(frozen=True)
class Unit:
    key: UnitKey
    spec: FilesystemSpec
    suite: Suite
    case: Case


def driver_for(spec: FilesystemSpec, existing: bool):
    """The driver of a variant; `existing`: a filesystem someone mounted (--mountpoint)."""
    return Existing(spec.name) if existing else filesystems.get(spec.name)


@dataclass(frozen=True)
class _Variant:
    """One [[filesystem]] of the plan: its pairs of a round and what was left out, and why."""
    spec: FilesystemSpec
    driver: object
    pairs: tuple[Pair, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Schedule:
    plan: Plan
    # every [[suite]] at the plan's profile with its cases, before any filesystem takes or
    # refuses them
    suite_cases: tuple[tuple[SuiteSpec, Suite, tuple[Case, ...]], ...]
    variants: tuple[_Variant, ...]
    existing: bool = False

    @classmethod
    def of(cls, plan: Plan, existing: bool = False) -> "Schedule":
        """Every suite's cases at the plan's profile, on every filesystem that takes them,
        in plan order. A suite's cases are expanded once for all filesystems; which
        filesystems this host can make is not judged here (see `here`)."""
        specs = [s.at_profile(plan.profile.name) for s in plan.suite]
        cases = tuple((s, suite, tuple(suite.cases(s, plan.profile)))
                      for s, suite in ((s, workloads.get(s.kind)) for s in specs))
        variants = []
        for spec in plan.filesystem:
            driver = driver_for(spec, existing)   # unknown names fail early, with the known ones
            pairs: list[Pair] = []
            notes: list[str] = []
            for _, suite, suite_cases in cases:
                why = suite.supports(driver)
                if why:
                    notes.append(f"{suite.name} skipped on {spec.label}: {why}")
                    continue
                for case in suite_cases:
                    refused = suite.refuses(case, driver, spec.label)
                    if refused:
                        notes.append(refused)
                        continue
                    pairs.append((spec, suite, case))
            variants.append(_Variant(spec, driver, tuple(pairs), tuple(notes)))
        return cls(plan, cases, tuple(variants), existing)

    def here(self) -> "Schedule":
        """This schedule without the filesystems this host cannot make (jfs without its
        module, say): each is skipped with a note and the rest still runs."""
        kept = []
        for v in self.variants:
            avail = v.driver.available()
            kept.append(v if avail.ok else replace(
                v, pairs=(), notes=(f"{v.spec.label} skipped: not available here ({avail.why})",)))
        return replace(self, variants=tuple(kept))

    def smallest_image(self, spec: FilesystemSpec) -> int | None:
        """The smallest loop image a unit of this plan would make `spec` on (what its
        options must fit: a probe on a larger one accepts what the run's mkfs refuses),
        or None when no case can tell before it runs."""
        driver = filesystems.get(spec.name)
        sizes = [suite.image_bytes(case, spec, self.plan.profile)
                 for _, suite, cases in self.suite_cases if not suite.supports(driver)
                 for case in cases if not suite.refuses(case, driver, spec.label)]
        sizes = [s for s in sizes if s]
        return max(min(sizes), driver.min_bytes) if sizes else None

    @property
    def pairs(self) -> list[Pair]:
        """(fs variant, suite, case) of one round, in plan order."""
        return [p for v in self.variants for p in v.pairs]

    @property
    def notes(self) -> list[str]:
        """What was left out and why, each said once, in plan order."""
        out: list[str] = []
        for v in self.variants:
            out += [n for n in v.notes if n not in out]
        return out

    @property
    def rounds(self) -> int:
        """The plan's fixed rounds (adaptive rounds and a race's come after them)."""
        return self.plan.iterations

    def round(self, it: int, pairs: list[Pair] | None = None,
              host: str = "localhost") -> list[Unit]:
        """Round `it` of these pairs (default: all), in the order drawn from the plan's seed
        and the round."""
        order = list(self.pairs if pairs is None else pairs)
        rng = random.Random(f"{self.plan.run.seed}:{it}")
        if self.plan.order == "grouped":
            order = _grouped(order, rng)
        else:
            rng.shuffle(order)
        return [Unit(UnitKey(host, spec.name, spec.variant, suite.name, case.name,
                             canonical_params(case.params), it), spec, suite, case)
                for spec, suite, case in order]

    def units(self, host: str = "localhost") -> list[Unit]:
        """Every unit of the fixed rounds, in run order."""
        return [u for it in range(1, self.rounds + 1) for u in self.round(it, host=host)]


def _grouped(pairs: list[Pair], rng: random.Random) -> list[Pair]:
    """A round with each case's units back to back: the cases in a random order, each
    case's filesystems in a random order. The units a within-round test pairs then run
    seconds apart, not minutes (drift slower than a unit cancels), and no filesystem holds
    a fixed place in its case's group."""
    def case_of(p: Pair) -> tuple:
        return (p[1].name, p[2].name, canonical_params(p[2].params))
    groups: dict[tuple, list[Pair]] = {}
    for p in pairs:
        groups.setdefault(case_of(p), []).append(p)
    cases = list(groups)
    rng.shuffle(cases)
    out: list[Pair] = []
    for c in cases:
        group = groups[c]
        rng.shuffle(group)
        out += group
    return out


def too_few_rounds(the_plan: Plan) -> str | None:
    """Said before a run whose rounds cannot separate its filesystems (e.g. a study's single
    pass at --profile paper), with the count that can."""
    k = len(the_plan.filesystem)
    n = the_plan.run.max_iterations if the_plan.run.adaptive else the_plan.iterations
    if k < 2 or n >= rounds_needed(k):
        return None
    return (f"{n} round{'s' if n != 1 else ''} per filesystem cannot separate {k} filesystems "
            f"in any verdict (it takes {rounds_needed(k)}, compared within rounds; more rounds "
            f"see smaller differences): the numbers are descriptive only; "
            f"--iterations {rounds_needed(k)} or more (or a profile with that many) can decide")
