"""A round's units grouped into blocks: the candidates of one case that the plan's design
runs as interleaved slices of one fio process (fslab/workloads/sliced.py), every other
unit alone."""
from __future__ import annotations

from fslab.filesystems.raw import Raw
from fslab.plan import Plan
from fslab.records import canonical_params
from fslab.run.schedule import Unit


def blocks(batch: list[Unit], plan: Plan, existing: bool) -> list[list[Unit]]:
    """`batch` in its order, consecutive units of one (round, suite, case) together where the
    plan's design is "sliced" and the case allows it; a one-unit list for everything else.
    With `order = "grouped"` (the default) a case's units are consecutive; "spread" order
    leaves blocks of one, which run as units."""
    if existing or plan.design != "sliced":
        return [[u] for u in batch]
    runs: list[list[Unit]] = []          # consecutive units of one case
    for u in batch:
        if runs and _same_case(runs[-1][0], u):
            runs[-1].append(u)
        else:
            runs.append([u])
    out: list[list[Unit]] = []
    for run in runs:   # its sliceable units as one block where it began, the rest alone
        block = [u for u in run if _sliceable(u)]
        placed = False
        for u in run:
            if not _sliceable(u):
                out.append([u])
            elif not placed:
                out.append(block)
                placed = True
    return out


def _sliceable(u: Unit) -> bool:
    """Whether the unit's case allows slices and its target holds files (the bare device,
    `raw`, has no directory for a slice's files: it runs as its own unit)."""
    return u.spec.name != Raw.name and u.suite.slicing(u.case) is None


def _same_case(a: Unit, b: Unit) -> bool:
    return (a.key.iteration, a.key.suite, a.key.case, canonical_params(a.case.params)) == \
        (b.key.iteration, b.key.suite, b.key.case, canonical_params(b.case.params)) \
        and a.key.host == b.key.host
