"""`fslab decide`'s workflow: the race's plan from the request (the candidates probed
first), stage 1 run by the session, then each next stage (docs/decide.md) in the same run,
and the decision stored with the run.

The race's statistics and the stages' rules are fslab/decide's; this module runs them,
which takes the session and the local executor (fslab/run, a floor above fslab/decide).
What it says goes to `console` (anything with Rich's `print(text, markup=, highlight=)`:
the session prints through it too); the caller prints the decision."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fslab import filesystems, plan as plans
from fslab.analysis.significance import MIN_BLOCKS
from fslab.decide import stages as st
from fslab.decide.candidates import STORED, Candidate, from_catalogue, from_file, named, small_image_hint
from fslab.decide.decision import decision
from fslab.decide.policy import RacePolicy
from fslab.decide.request import DecideRequest
from fslab.decide.result import Decision, Verdict
from fslab.errors import FslabError
from fslab.plan.variants import parse_fs, spec_fields
from fslab.run import validate
from fslab.run.dryrun import duration_text, outline
from fslab.run.flags import from_flags
from fslab.run.local import LocalExecutor
from fslab.run.race_suites import filesystem_workloads, ram_bytes
from fslab.run.schedule import Schedule
from fslab.run.session import RunSession
from fslab.store import Store, open_store
from fslab.store.environment import DecideState, RunEnvironment, StoredStage
from fslab.system.proc import is_root


@dataclass(frozen=True)
class DecideOutcome:
    decision: Decision
    store: Store


def run_decide(request: DecideRequest, console: Any) -> DecideOutcome:
    """Run (or, with request.resume, continue) a decide; its decision, stored with the run."""
    if not 1 <= request.stages <= 3:
        raise FslabError(f"--stages {request.stages}: 1, 2 or 3")
    schedule = None   # the plan expanded: by validation, or by the session of a resumed race
    if request.resume:
        store = open_store(request.results)
        run = store.run(request.resume)
        resume = run["run_id"]
        the_plan = plans.parse(run["plan"], f"stored plan of {resume}")
        if the_plan.decide is None:
            raise FslabError(f"run {resume} is not a decide: resume it with fslab run --resume {resume}")
        probed = RunEnvironment.of_run(run).options_probe
    else:
        resume = None
        with validate.as_input_errors():
            validate.flags(profile=request.profile, iterations=None, fio=list(request.fio),
                           workdir=request.workdir, image_size=request.image_size, target=None)
            the_plan, probed = race_plan(request, MIN_BLOCKS, console)
            schedule = validate.plan(the_plan)
        store = open_store(request.results)
    if not resume:
        for line in capture_lines(request):   # a replay's race: what it stands for, first
            console.print(line, markup=False, highlight=False)
        console.print(first_rounds(outline(the_plan, store, schedule=schedule), request),
                      markup=False, highlight=False)
    remember = None if resume else DecideState.settings_patch(request.stages, request.max_candidates)
    policy = RacePolicy(the_plan, store, console, MIN_BLOCKS, remember=remember)
    executor = LocalExecutor("loop", workdir=request.workdir, rounds_policy=policy, probed=probed)
    session = RunSession(the_plan, store, console, resume=resume, schedule=schedule)
    session.run(executor, summary=False)
    dec = later_stages(store, session.run_id, the_plan, probed, request.workdir, MIN_BLOCKS, console)
    for line in not_the_filesystem(RunEnvironment.of_run(store.run(session.run_id)), dec):
        console.print(line, markup=False, highlight=False)
    store.update_environment(session.run_id, DecideState.decision_patch(dec.to_json()))
    return DecideOutcome(dec, store)


def capture_lines(request: DecideRequest) -> list[str]:
    """What each raced capture left out (fslab/capture/account.py), before the race."""
    from fslab.capture.format import load
    from fslab.workloads.replay import capture_account
    out = []
    for path in request.replay:
        said = capture_account(load(path))
        out += [f"{path.name} — capture: {line}" for line in said["lines"]]
    return out


def not_the_filesystem(env: RunEnvironment, dec: Decision) -> list[str]:
    """A line per raced workload whose units said no I/O of theirs reached the filesystem
    (pgbench select-only with the database in the page cache: memory and CPU): in a
    geometric mean with the others it dilutes what the race compares."""
    raced = {key.split(" ", 1)[0] for key in dec.metrics}
    quiet = sorted(k for k, w in env.workloads.items() if k in raced and w.get("filesystem_io") is False)
    others = ", ".join(sorted(raced - set(quiet)))
    lines = []
    for k in quiet:
        line = f"note: {k}: {env.workloads[k].get('database_vs_ram') or 'none of its I/O reached the filesystem'}"
        if others:
            line += (f"; it is in the race's {dec.metric} beside {others}: to race those alone, "
                     "a plan file (fslab decide PLAN.toml ...) whose [[suite]] lists only them")
        lines.append(line)
    return lines


def first_rounds(o: dict[str, Any], request: DecideRequest) -> str:
    """What the race costs before it can stop, said before its first unit: the first
    rounds always run (the tests compare within rounds from there on) and --budget
    cannot shorten them (a 30 s job file raced over 28 candidates is 16 min a round).
    The estimate is dry run's: earlier units of the same case in this store, else the
    case's options."""
    rounds, units = o["iterations"], o["units"]
    unknown = o["cases_without_estimate"] * rounds
    known = units - unknown
    if known:
        took = f"about {duration_text(o['estimate_seconds'])}" + (
            f" for {known} of them, {unknown} with no estimate" if unknown else "")
    else:
        took = "how long: unknown until they run (no earlier run of these cases in this " \
               "store; a job bound by its size alone has no estimate)"
    line = (f"the first {rounds} rounds always run, before the race can stop: {units} units "
            f"({len(o['filesystems'])} candidates, {rounds} rounds), {took}; --budget counts "
            "them but cannot cut them short")
    if o["estimate_seconds"] > 15 * 60:
        shorter = ["fewer candidates (--options KEY,...)"]
        if o["profile"] != "smoke":
            shorter.append("--profile smoke (shorter units: a job file's runtime capped)"
                           if request.job else "--profile smoke (shorter units)")
        line += "; shorter: " + " or ".join(shorter)
    return line


def race_plan(request: DecideRequest, min_rounds: int, console: Any) -> tuple[plans.Plan, dict]:
    """The plan of the race: the workload from the flags, the candidates as its
    [[filesystem]] tables (each probed first: a rejected one is dropped with one line)."""
    r = request
    allowed = {"safe"} | ({"trade"} if r.allow == "trade" else set())
    if r.allow not in ("safe", "trade"):
        raise FslabError(f"--allow {r.allow!r}: choose safe or trade")
    if not (0 < r.delta < 1):
        raise FslabError(f"--delta {r.delta}: a fraction between 0 and 1 (0.03 = 3%)")
    if r.max_rounds < min_rounds:
        raise FslabError(f"--max-rounds {r.max_rounds}: at least {min_rounds} (the race compares "
                         f"within rounds from round {min_rounds} on)")
    if r.metric:
        from fslab.metrics import find
        found = find(r.metric)
        if found is None or found.better not in ("higher", "lower"):
            raise FslabError(f"--metric {r.metric!r}: not a ranked metric any suite records (e.g. "
                             "write_iops, read_bw, write_clat_p99, sync_lat_p99)")
    if not r.fs and not r.candidates:
        raise FslabError("name what to race: --fs ext4,xfs (their option catalogues) or "
                         "--candidates FILE")
    budget_s = r.budget_seconds
    # the user's own candidates (a file, named variants) are refused as `fslab run` refuses
    # them; the catalogue's may be dropped with a line
    own = bool(r.candidates) or any(v.variant != "default" for v in parse_fs(r.fs or ""))
    if r.candidates:
        cs = from_file(r.candidates, allowed)
    else:
        items = parse_fs(r.fs or "")
        if any(v.variant != "default" for v in items):     # exactly the variants named
            cs = named([plans.FilesystemSpec(**spec_fields(v)) for v in items], allowed)
            if len(cs.candidates) < 2:
                raise FslabError("fewer than 2 candidates to race" + (
                    f" ({'; '.join(cs.left_out)})" if cs.left_out else ""))
        else:
            keys = {k.strip() for k in r.options.split(",")} if r.options else None
            cs = from_catalogue([v.name for v in items], allowed, keys, r.max_candidates)
    base = from_flags(r.plan_file, "ext4", r.suite, r.profile, min_rounds, r.seed, list(r.fio),
                      None, None, False, list(r.job), r.image_size,
                      with_text=False,   # the race's text is written below
                      replay=list(r.replay))
    if r.plan_file is None:     # --suite: the workloads that bear on the filesystem
        base, narrowed = filesystem_workloads(base, ram_bytes())
        for line in narrowed:
            console.print(f"note: {line}", markup=False, highlight=False)
    if not is_root():
        raise FslabError("fslab decide needs root to create loop devices and mount filesystems")
    kept, probed, left = probed_candidates(cs.candidates, base, console, own=own)
    left = list(cs.left_out) + left
    if len(kept) < 2:
        raise FslabError(f"{len(kept)} candidate(s) left after the probe: nothing to race")
    race = base.model_copy(update={
        "filesystem": [c.spec.model_copy(update={"image_size": r.image_size}) if r.image_size
                       else c.spec for c in kept],
        "run": base.run.model_copy(update={"iterations": min_rounds}),
        "decide": plans.DecideSection(metric=r.metric, delta=r.delta, max_rounds=r.max_rounds,
                                      budget_seconds=budget_s, allow=sorted(allowed),
                                      candidates={c.label: {k: v for k, v in c.as_dict().items()
                                                            if k in STORED}
                                                  for c in kept},
                                      left_out=left, keep_going=r.keep_going)})
    race.check_unique_variants()
    race = race.model_copy(update={"source_text": plans.to_toml(race),
                                   "source_path": "<fslab decide>"})
    console.print(f"racing {len(kept)} candidates: {', '.join(c.label for c in kept)}",
                  markup=False, highlight=False)
    return race, probed


def probed_candidates(cands: list[Candidate], plan: plans.Plan, console: Any = None,
                      own: bool = False) -> tuple[list[Candidate], dict, list[str]]:
    """(the candidates mkfs and mount accept, what the probe read back, one line per
    candidate dropped): every candidate with options of its own is probed first, on an
    image the size `plan`'s units will make it on. `own`: the user's own candidates, of
    which a refused one is an input error (exit 2, nothing stored), as in `fslab run`.
    `console` None: quiet."""
    from fslab.run.probe import has_own_options, probe, probe_sizes   # at use: it starts no work at import
    size = probe_sizes(plan)
    kept, probed, left = [], {}, []
    for c in cands:
        driver = filesystems.get(c.spec.name)
        if not driver.available().ok:
            left.append(f"{c.label}: {driver.available().why}")
            continue
        if has_own_options(c.spec) and driver.probe_options:
            r = probe(driver, c.spec, size_bytes=size(c.spec))
            probed[c.label] = r.as_dict()
            if not r.ok:
                if own:
                    raise FslabError(f"{r.why} (your candidate: fix or remove it; fslab run "
                                     "refuses it alike)", code=2)
                why = r.why + small_image_hint(r.why, size(c.spec))
                if console is not None:
                    console.print(f"dropped {why}", markup=False, highlight=False)
                # the probe's line names the candidate already ("xfs:lb256: mkfs ...")
                left.append(why if why.startswith(f"{c.label}: ") else f"{c.label}: {why}")
                continue
        kept.append(c)
    return kept, probed, left


def later_stages(store: Store, run_id: str, plan1: plans.Plan, probed1: dict,
                 workdir: Path | None, min_rounds: int, console: Any) -> Decision:
    """Stage 1 has run: each next stage (docs/decide.md), built from the store or, on
    --resume, read back from it, run in the same run; the decision of the last stage,
    with every stage's summary."""
    state = RunEnvironment.of_run(store.run(run_id)).decide
    stored = state.stages
    stage = st.Stage(st.first_kind(plan1), plan1, 0, probed1)
    decs, notes = [decision(store, run_id, plan1, min_rounds)], []
    done = [stage]
    while True:
        n = len(done) + 1
        if decs[-1].verdict is Verdict.UNDECIDED:     # said once, in the decision
            notes.append(f"no stage {n}: stage {n - 1} could not decide at --delta "
                         f"{decs[-1].delta * 100:g}% (its first look said why)")
            break
        if n - 2 < len(stored):           # a stage this run began already: as it was
            s = stored[n - 2]
            stage = st.Stage(s.kind, plans.parse(s.plan, f"stage {n} of {run_id}"),
                             s.first_round, s.probed)
            notes.append(s.why)
        else:
            stop = (f"--stages {state.max_stages}" if n > state.max_stages
                    else st.budget_stop(store, run_id, plan1, done[-1].first))
            if stop:      # said only when there would have been a next stage
                kind, _, _ = st.next_candidates(done[-1], decs[-1], store, run_id, min_rounds,
                                                state.max_candidates)
                if kind:
                    notes.append(f"no stage {n}: {stop}")
                break
            probes: dict = {}

            def refused(c: Candidate) -> str | None:
                kept, probed, left = probed_candidates([c], plan1)
                probes.update(probed)
                why = left[0] if left else ""
                while why.startswith(f"{c.label}: "):      # the probe's line names it already
                    why = why[len(c.label) + 2:]
                return None if kept else why
            kind, cands, lines = st.next_candidates(done[-1], decs[-1], store, run_id, min_rounds,
                                                    state.max_candidates, refused)
            if kind is None:      # said once, in the decision
                notes += lines
                break
            for line in lines:
                console.print(line, markup=False, highlight=False)
            kept, probed, left = probed_candidates([c for c in cands if c.label not in probes],
                                                   plan1, console)
            kept += [c for c in cands if c.label in probes]       # the combinations, probed
            kept.sort(key=cands.index)
            probed.update({c.label: probes[c.label] for c in kept if c.label in probes})
            if len(kept) < 2:
                notes.append(f"no stage {n}: {len(kept)} candidate(s) left after the probe "
                             f"({'; '.join(left)})")
                break
            first = max((int(u["iteration"]) for u in store.units(run_id)), default=0)
            plan = st.stage_plan(plan1, n, first, kept)
            stage = st.Stage(kind, plan, first, probed)
            why = "; ".join(lines + [f"dropped {lo}" for lo in left])
            stored.append(StoredStage(kind, first, plan.source_text, probed, why))
            store.update_environment(run_id, DecideState.stages_patch(stored))
            notes.append(why)
        policy = RacePolicy(stage.plan, store, console, min_rounds, first=stage.first)
        executor = StageExecutor(stage, n, workdir=workdir, rounds_policy=policy,
                                 probed=stage.probed)
        session = RunSession(stage.plan, store, console, resume=run_id,
                             schedule=StageSchedule.of(stage.plan))
        session.run(executor, summary=False)
        decs.append(decision(store, run_id, stage.plan, min_rounds, first=stage.first))
        done.append(stage)
    return st.staged(decs, done, notes)


class StageSchedule(Schedule):
    """A later stage's schedule: no fixed rounds (the race asks for every round, from
    first+1 on, where plan.iterations = first)."""

    def units(self, host: str = "localhost") -> list:
        return []


class StageExecutor(LocalExecutor):
    """A later stage's executor: the local one, announcing the stage."""

    def __init__(self, stage: st.Stage, number: int, **kw: Any):
        super().__init__("loop", **kw)
        self.stage, self.number = stage, number

    def announce(self, session: RunSession) -> None:
        p = session.plan
        session.console.print(f"stage {self.number} of run {session.run_id}: {st.WHAT[self.stage.kind]}: "
                              f"{', '.join(f.label for f in p.filesystem)}; fresh rounds from "
                              f"round {self.stage.first + 1}, seed {p.run.seed}",
                              markup=False, highlight=False)
