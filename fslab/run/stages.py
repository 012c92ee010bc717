"""How a decide's later stage runs (fslab/decide/stages.py says what it races): an
executor that announces the stage, and a schedule with no fixed rounds (the race asks
for every round, from the stage's first + 1 on)."""
from __future__ import annotations

from fslab.decide import stages as st
from fslab.run.local import LocalExecutor
from fslab.run.schedule import Schedule


class StageSchedule(Schedule):
    """A later stage's schedule: no fixed rounds (the race asks for every round, from
    first+1 on, where plan.iterations = first)."""

    def units(self, host: str = "localhost") -> list:
        return []


class StageExecutor(LocalExecutor):
    def __init__(self, stage: st.Stage, number: int, **kw):
        super().__init__("loop", **kw)
        self.stage, self.number = stage, number

    def announce(self, session) -> None:
        p = session.plan
        session.console.print(f"stage {self.number} of run {session.run_id}: {st.WHAT[self.stage.kind]}: "
                              f"{', '.join(f.label for f in p.filesystem)}; fresh rounds from "
                              f"round {self.stage.first + 1}, seed {p.run.seed}",
                              markup=False, highlight=False)
