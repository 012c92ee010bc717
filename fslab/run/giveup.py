"""A case that failed the same way on every filesystem of the first round (a job file fio
refuses, a trim on a regular file) fails the same way in every later round: its later
units are not run, and one line says so instead of one failure per unit. Only with two
filesystems or more, and never for a hang (a frozen daemon, a loaded machine)."""
from __future__ import annotations

from dataclasses import dataclass, field

from fslab.run.schedule import Unit

CaseId = tuple[str, str, str, str]   # host, suite, case, params
NOT_RUN = "not run: failed on every filesystem in round 1: "   # the message's prefix


def _case(unit: Unit) -> CaseId:
    k = unit.key
    return (k.host, k.suite, k.case, k.params)


def _same_everywhere(unit: Unit, message: str) -> str:
    """The message with the unit's own filesystem taken out, to compare across them."""
    k = unit.key
    return message.replace(f"{k.fs}-{k.variant}", "<fs>").replace(f"{k.fs}/{k.variant}", "<fs>")


@dataclass
class IdenticalFailures:
    first_round: dict[CaseId, set[str]]          # the filesystems each case runs on in round 1
    failures: dict[CaseId, dict[str, str]] = field(default_factory=dict)
    given_up: dict[CaseId, str] = field(default_factory=dict)   # case -> the shared message

    @classmethod
    def of(cls, units: list[Unit]) -> "IdenticalFailures":
        first: dict[CaseId, set[str]] = {}
        for u in units:
            if u.key.iteration == 1:
                first.setdefault(_case(u), set()).add(u.spec.label)
        return cls(first)

    def record(self, unit: Unit, message: str | None) -> str | None:
        """Note a first-round unit's outcome (message None: it succeeded); a line when its
        case has now failed identically on every filesystem."""
        case = _case(unit)
        if unit.key.iteration != 1 or case not in self.first_round:
            return None
        if message is None:
            self.first_round.pop(case)     # it works somewhere: every unit runs
            return None
        seen = self.failures.setdefault(case, {})
        seen[unit.spec.label] = _same_everywhere(unit, message)
        # one filesystem is no evidence the job itself fails; a hang may be a passing state
        if len(seen) > 1 and set(seen) == self.first_round[case] and \
                len(set(seen.values())) == 1 and not message.startswith("hung:"):
            self.given_up[case] = message
            k = unit.key
            return (f"{k.suite}:{k.case} failed the same way on all {len(seen)} filesystems in "
                    f"round 1, so its later rounds are not run: {message}")
        return None

    def skips(self, unit: Unit) -> str | None:
        """Why this unit is not run (its case was given up), or None."""
        message = self.given_up.get(_case(unit))
        return None if message is None else NOT_RUN + message
