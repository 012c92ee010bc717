"""A round's units grouped into blocks: the candidates of one case that the plan's design
runs as interleaved slices of one fio process (fslab/workloads/sliced.py), every other
unit alone."""
from __future__ import annotations

from fslab.plan import Plan
from fslab.records import canonical_params
from fslab.run.schedule import Unit


def blocks(batch: list[Unit], plan: Plan, existing: bool) -> list[list[Unit]]:
    """`batch` in its order, consecutive units of one (round, suite, case) together where the
    plan's design is "sliced" and the case allows it; a one-unit list for everything else.
    With `order = "grouped"` (the default) a case's units are consecutive; "spread" order
    leaves blocks of one, which run as units."""
    out: list[list[Unit]] = []
    for u in batch:
        if not existing and plan.design == "sliced" and u.suite.slicing(u.case) is None \
                and out and len(out[-1]) and _same_case(out[-1][0], u) \
                and out[-1][0].suite.slicing(out[-1][0].case) is None:
            out[-1].append(u)
        else:
            out.append([u])
    return out


def _same_case(a: Unit, b: Unit) -> bool:
    return (a.key.iteration, a.key.suite, a.key.case, canonical_params(a.case.params)) == \
        (b.key.iteration, b.key.suite, b.key.case, canonical_params(b.case.params)) \
        and a.key.host == b.key.host
