"""A decide store written before the decision was typed (schema version 1: no version key,
"winner" the leader) still reads and says the same: tests/data/decide-v1 is the store of
`fslab decide --fs ext4:default,ext4:noatime --profile smoke --keep-going --max-rounds 4`
as fslab wrote it then, tie.txt the decision's lines as that fslab said them."""
from __future__ import annotations

import shutil
from pathlib import Path

from fslab.decide.decision import text
from fslab.decide.race import StopReason
from fslab.decide.result import SCHEMA_VERSION, Decision, Verdict, stored_decisions
from fslab.store import open_store
from fslab.store.environment import RunEnvironment

DATA = Path(__file__).parent / "data" / "decide-v1"
RUN = "20261128-055953-6975"


def _stored(tmp_path):
    shutil.copy(DATA / "fslab.sqlite", tmp_path / "fslab.sqlite")   # opening it may migrate it
    return open_store(tmp_path).run(RUN)


def test_a_decision_stored_before_the_types_reads_and_says_the_same(tmp_path):
    run = _stored(tmp_path)
    raw = RunEnvironment.of_run(run).decide.decision
    assert raw is not None and "schema_version" not in raw
    [dec] = stored_decisions([run])
    assert dec.stored_version == 1
    assert dec.verdict is Verdict.TIE and dec.stopped is StopReason.BUDGET
    assert dec.leader == "ext4" and dec.winner is None       # v1 kept the leader in "winner"
    assert text(dec) == (DATA / "tie.txt").read_text().splitlines()
    # written back at its own version, it is the stored JSON itself (fslab report --json)
    assert dec.to_json(1) == raw and list(dec.to_json(1)) == list(raw)


def test_the_current_json_round_trips_and_says_its_version(tmp_path):
    [dec] = stored_decisions([_stored(tmp_path)])
    now = dec.to_json()
    assert now["schema_version"] == SCHEMA_VERSION and now["winner"] is None
    assert now["leader"] == "ext4" and now["stop_reason"] == "budget"
    assert Decision.from_json(now) == dec and Decision.from_json(now).to_json() == now


def test_the_decide_section_of_the_environment_is_typed(tmp_path):
    state = RunEnvironment.of_run(_stored(tmp_path)).decide
    assert state.max_stages == 3 and state.max_candidates == 40 and state.stages == []
    assert state.budget_stop_after(0) is None and state.noise_why(0) == ""
    assert RunEnvironment.of({}).decide.max_stages == 1      # a decide from before --stages


def test_a_stored_decision_of_an_options_race_with_a_note_and_a_left_out_one():
    """options-decision.json: the decision stored by `fslab decide --fs ext4 --options
    noatime,lazytime,-b --profile smoke --max-rounds 3 --keep-going` (a trade left out, no
    combination stage), options.txt its lines as that fslab said them."""
    import json
    raw = json.loads((DATA / "options-decision.json").read_text())
    dec = Decision.from_json(raw)
    assert dec.stored_version == 1 and dec.left_out and dec.stage_notes and len(dec.stages) == 1
    assert dec.stages[0].leader == dec.leader and dec.stages[0].winner is None
    assert text(dec) == (DATA / "options.txt").read_text().splitlines()
    assert dec.to_json(1) == raw and list(dec.to_json(1)) == list(raw)
