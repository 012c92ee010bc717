"""`fslab decide`: which filesystem, with which options, for this workload: a race of
candidates (each filesystem at its defaults and each catalogue option varied alone, or
the user's own list), the significantly worse eliminated round by round, then further
stages in the same run (the options that helped, combined; docs/decide.md)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from fslab import plan as plans, filesystems
from fslab.commands._common import ResultsOpt, console, err, results_dir
from fslab.errors import FslabError
from fslab.store import open_store
from fslab.store.environment import DecideState, RunEnvironment, StoredStage
from fslab.run.flags import from_flags
from fslab.system.proc import is_root

# fslab modules are imported inside the commands: cli imports every command module at
# start-up, so what a command runs loads only when it runs (`fslab --help` stays fast)


def register(app: typer.Typer) -> None:
    app.command("decide")(decide)


def decide(
    plan_file: Optional[Path] = typer.Argument(None, help="Plan TOML whose suites are the workload "
                                               "(its \\[\\[filesystem]] tables are replaced by the candidates)."),
    fs: Optional[str] = typer.Option(None, "--fs", help="Filesystems whose option catalogues to race "
                                     "(fslab options lists them), e.g. ext4,xfs; with NAME:VARIANT[...] "
                                     "items, exactly those variants race."),
    candidates: Optional[Path] = typer.Option(None, "--candidates", help="TOML of \\[\\[candidate]] tables "
                                              "(the keys of a plan's \\[\\[filesystem]]; safety = \"trade\" "
                                              "and trades = \"...\" for one that gives something up; "
                                              "throttle = \"5%\" plants a slowdown, a benchmark aid)."),
    options: Optional[str] = typer.Option(None, "--options", help="Only these catalogue keys, e.g. "
                                          "recordsize,compression."),
    allow: str = typer.Option("safe", "--allow", help="safe (default): options without a durability "
                              "or feature cost; trade: also those that give something up (the "
                              "answer says what)."),
    job: list[Path] = typer.Option([], "--job", help="A fio job file: the workload (repeatable)."),
    replay: list[Path] = typer.Option([], "--replay", help="A replay file (fslab capture): the "
                                      "workload, replayed as fast as possible (repeatable)."),
    suite: Optional[str] = typer.Option(None, "--suite", help="Suites as the workload (default: fio)."),
    metric: Optional[str] = typer.Option(None, "--metric", help="The metric to race on (default: each "
                                         "workload's answer metric, e.g. write IOPS; write_clat_p99 "
                                         "for p99 write latency)."),
    delta: float = typer.Option(0.03, "--delta", help="Indifference zone (default 0.03 = 3%): a "
                                "candidate shown not this much better than the leader stops "
                                "racing; all within it of the leader on both sides are a tie."),
    max_rounds: int = typer.Option(10, "--max-rounds", help="At most this many rounds (per stage)."),
    budget: Optional[str] = typer.Option(None, "--budget", help="Time budget of all stages, e.g. 20m "
                                         "or 1h: after a stage's first 3 rounds (which always "
                                         "run), no round starts that the rounds' average time says "
                                         "would end past it, and no stage starts after that or "
                                         "once it is spent."),
    max_candidates: int = typer.Option(40, "--max-candidates", help="Most candidates one race takes: "
                                            "one filesystem's catalogue past it is refused (narrow "
                                            "it with --options); several filesystems' are raced at "
                                            "their defaults first, then the winner's options."),
    profile: Optional[str] = typer.Option(None, "--profile", help="smoke | quick (default) | standard."),
    fio: list[str] = typer.Option([], "--fio", help="fio job option KEY=VALUE for the fio suite (repeatable)."),
    image_size: Optional[str] = typer.Option(None, "--image-size", help="Loop image size, e.g. 4G."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the round order (default 42)."),
    results: Optional[Path] = ResultsOpt,
    resume: Optional[str] = typer.Option(None, "--resume", help="Continue an interrupted decide."),
    workdir: Optional[Path] = typer.Option(None, "--workdir", help="Where loop images go."),
    stages: int = typer.Option(3, "--stages", help="At most this many stages: 1 races only what "
                               "was named; 2 adds the next (the options that helped, combined; or "
                               "the screen winner's options); 3 (default) also combines those."),
    keep_going: bool = typer.Option(False, "--keep-going", help="Race on when the first look "
                                    "says the rounds are too noisy to decide --delta (by "
                                    "default the decide stops there and says so)."),
    as_json: bool = typer.Option(False, "--json", help="Print the decision as JSON (stdout "
                                 "holds the JSON alone: progress and notes go to stderr)."),
) -> None:
    """Race filesystems and their options on your workload; say the winner, P(best), the
    cost of a wrong choice, and what to type."""
    from fslab.analysis.significance import MIN_BLOCKS
    from fslab.decide.policy import RacePolicy
    from fslab.run import validate
    from fslab.run.local import LocalExecutor
    from fslab.run.session import RunSession
    schedule = None   # the plan expanded: by validation, or by the session of a resumed race
    con = err if as_json else console     # with --json, stdout holds the JSON alone
    if not 1 <= stages <= 3:
        raise FslabError(f"--stages {stages}: 1, 2 or 3")
    if resume:
        store = open_store(results_dir(results))
        run = store.run(resume)
        resume = run["run_id"]
        the_plan = plans.parse(run["plan"], f"stored plan of {resume}")
        if the_plan.decide is None:
            raise FslabError(f"run {resume} is not a decide: resume it with fslab run --resume {resume}")
        probed = RunEnvironment.of_run(run).options_probe
    else:
        with validate.as_input_errors():
            validate.flags(profile=profile, iterations=None, fio=fio, workdir=workdir,
                           image_size=image_size, target=None)
            the_plan, probed = _race_plan(plan_file, fs, candidates, options, allow, job, suite,
                                          metric, delta, max_rounds, budget, max_candidates,
                                          profile, fio, image_size, seed, MIN_BLOCKS, replay,
                                          keep_going, con)
            schedule = validate.plan(the_plan)
        store = open_store(results_dir(results))
    remember = None if resume else DecideState.settings_patch(stages, max_candidates)
    policy = RacePolicy(the_plan, store, con, MIN_BLOCKS, remember=remember)
    executor = LocalExecutor("loop", workdir=workdir, rounds_policy=policy, probed=probed)
    session = RunSession(the_plan, store, con, resume=resume, schedule=schedule)
    session.run(executor, summary=False)
    dec = _later_stages(store, session.run_id, the_plan, probed, workdir, MIN_BLOCKS, con)
    store.update_environment(session.run_id, DecideState.decision_patch(dec.to_json()))
    from fslab.decide.decision import text
    if as_json:
        import orjson
        print(orjson.dumps(dec.to_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        for line in text(dec):
            console.print(line, markup=False, highlight=False)
        console.print(f"every unit is stored: fslab report {session.run_id} --results {store.root}",
                      markup=False, highlight=False)


def _race_plan(plan_file, fs, candidates, options, allow, job, suite, metric, delta, max_rounds,
               budget, max_candidates, profile, fio, image_size, seed, min_rounds, replay=(),
               keep_going=False, con=console):
    """The plan of the race: the workload from the flags, the candidates as its
    [[filesystem]] tables (each probed first: a rejected one is dropped with one line)."""
    from fslab.decide.candidates import STORED, from_catalogue, from_file
    from fslab.plan.variants import parse_fs, spec_fields
    allowed = {"safe"} | ({"trade"} if allow == "trade" else set())
    if allow not in ("safe", "trade"):
        raise FslabError(f"--allow {allow!r}: choose safe or trade")
    if not (0 < delta < 1):
        raise FslabError(f"--delta {delta}: a fraction between 0 and 1 (0.03 = 3%)")
    if max_rounds < min_rounds:
        raise FslabError(f"--max-rounds {max_rounds}: at least {min_rounds} (the race compares "
                         f"within rounds from round {min_rounds} on)")
    if metric:
        from fslab.metrics import find
        if find(metric) is None or find(metric).better not in ("higher", "lower"):
            raise FslabError(f"--metric {metric!r}: not a ranked metric any suite records (e.g. "
                             "write_iops, read_bw, write_clat_p99, sync_lat_p99)")
    if not fs and not candidates:
        raise FslabError("name what to race: --fs ext4,xfs (their option catalogues) or "
                         "--candidates FILE")
    budget_s = _seconds(budget) if budget else None
    # the user's own candidates (a file, named variants) are refused as `fslab run` refuses
    # them; the catalogue's may be dropped with a line
    own = bool(candidates) or any(v.variant != "default" for v in parse_fs(fs or ""))
    if candidates:
        cs = from_file(candidates, allowed)
    else:
        items = parse_fs(fs)
        if any(v.variant != "default" for v in items):     # exactly the variants named
            from fslab.decide.candidates import named
            cs = named([plans.FilesystemSpec(**spec_fields(v)) for v in items], allowed)
            if len(cs.candidates) < 2:
                raise FslabError("fewer than 2 candidates to race" + (
                    f" ({'; '.join(cs.left_out)})" if cs.left_out else ""))
        else:
            keys = {k.strip() for k in options.split(",")} if options else None
            cs = from_catalogue([v.name for v in items], allowed, keys, max_candidates)
    base = from_flags(plan_file, "ext4", suite, profile, min_rounds, seed, fio, None, None,
                      False, job, image_size, with_text=False,   # the race's text is written below
                      replay=replay)
    if not is_root():
        raise FslabError("fslab decide needs root to create loop devices and mount filesystems")
    kept, probed, left = _probed(cs.candidates, base, con=con, own=own)
    left = list(cs.left_out) + left
    if len(kept) < 2:
        raise FslabError(f"{len(kept)} candidate(s) left after the probe: nothing to race")
    race = base.model_copy(update={
        "filesystem": [c.spec.model_copy(update={"image_size": image_size}) if image_size
                       else c.spec for c in kept],
        "run": base.run.model_copy(update={"iterations": min_rounds}),
        "decide": plans.DecideSection(metric=metric, delta=delta, max_rounds=max_rounds,
                                      budget_seconds=budget_s, allow=sorted(allowed),
                                      candidates={c.label: {k: v for k, v in c.as_dict().items()
                                                            if k in STORED}
                                                  for c in kept},
                                      left_out=left, keep_going=keep_going)})
    race.check_unique_variants()
    race = race.model_copy(update={"source_text": plans.to_toml(race),
                                   "source_path": "<fslab decide>"})
    con.print(f"racing {len(kept)} candidates: {', '.join(c.label for c in kept)}",
              markup=False, highlight=False)
    return race, probed


def _probed(cands, plan, quiet: bool = False, con=console, own: bool = False
            ) -> tuple[list, dict, list[str]]:
    """(the candidates mkfs and mount accept, what the probe read back, one line per
    candidate dropped): every candidate with options of its own is probed first, on an
    image the size `plan`'s units will make it on. `own`: the user's own candidates, of
    which a refused one is an input error (exit 2, nothing stored), as in `fslab run`."""
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
                why = r.why + _small_image(r.why, size(c.spec))
                if not quiet:
                    con.print(f"dropped {why}", markup=False, highlight=False)
                # the probe's line names the candidate already ("xfs:lb256: mkfs ...")
                left.append(why if why.startswith(f"{c.label}: ") else f"{c.label}: {why}")
                continue
        kept.append(c)
    return kept, probed, left


def _small_image(why: str, size_bytes: int) -> str:
    """What to add where mkfs refused an option for the image's size (mkfs.xfs `-d
    agcount=8` on a smoke image: "Log size must be at least 64MB"): the profile's image
    is too small for it, not the option wrong."""
    import re
    if not re.search(r"too small|must be at least|at least \d+\s*[KMG]|minimum size|"
                     r"too many allocation groups|not enough space", why, re.I):
        return ""
    return (f" (on this profile's {size_bytes >> 20} MiB image, the size its units use: "
            "a larger --image-size or --profile may take it)")


def _seconds(text: str) -> float:
    import re
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not m:
        raise FslabError(f"--budget {text!r}: e.g. 90s, 20m or 2h")
    return float(m[1]) * {"": 1, "s": 1, "m": 60, "h": 3600}[m[2]]


def _later_stages(store, run_id: str, plan1, probed1: dict, workdir, min_rounds: int,
                  con=console):
    """Stage 1 has run: each next stage (docs/decide.md), built from the store or, on
    --resume, read back from it, run in the same run; the decision of the last stage,
    with every stage's said in "stages"."""
    from fslab.decide import stages as st
    from fslab.run.stages import StageExecutor, StageSchedule
    from fslab.decide.decision import decision
    from fslab.decide.result import Verdict
    from fslab.decide.policy import RacePolicy
    from fslab.run.session import RunSession
    state = RunEnvironment.of_run(store.run(run_id)).decide
    stored = state.stages
    max_stages = state.max_stages
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
            stop = f"--stages {max_stages}" if n > max_stages else _budget_stop(store, run_id, plan1,
                                                                                 done[-1].first)
            if stop:      # said only when there would have been a next stage
                kind, _, _ = st.next_candidates(done[-1], decs[-1], store, run_id, min_rounds,
                                                state.max_candidates)
                if kind:
                    notes.append(f"no stage {n}: {stop}")
                break
            probes: dict = {}

            def refused(c):
                kept, probed, left = _probed([c], plan1, quiet=True)
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
                con.print(line, markup=False, highlight=False)
            kept, probed, left = _probed([c for c in cands if c.label not in probes], plan1, con=con)
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
        policy = RacePolicy(stage.plan, store, con, min_rounds, first=stage.first)
        executor = StageExecutor(stage, n, workdir=workdir, rounds_policy=policy,
                                    probed=stage.probed)
        session = RunSession(stage.plan, store, con, resume=run_id,
                             schedule=StageSchedule.of(stage.plan))
        session.run(executor, summary=False)
        decs.append(decision(store, run_id, stage.plan, min_rounds, first=stage.first))
        done.append(stage)
    import dataclasses
    out = dataclasses.replace(
        decs[-1], stages=tuple(_stage_summary(i + 1, s, d, notes[i - 1] if i else "")
                               for i, (s, d) in enumerate(zip(done, decs))),
        stage_notes=tuple(notes[len(done) - 1:]))
    if len(done) > 1:     # units and rounds of the whole decide, not only its last stage
        out = dataclasses.replace(
            out, units_run=sum(d.units_run for d in decs),
            units_full_factorial=sum(d.units_full_factorial for d in decs),
            left_out=decs[0].left_out + out.left_out)
    return out


def _stage_summary(n: int, stage, dec, why: str):
    from fslab.decide.stages import WHAT
    from fslab.decide.result import StageSummary
    return StageSummary(
        stage=n, kind=stage.kind, raced=WHAT[stage.kind], why=why,
        candidates=tuple(f.label for f in stage.plan.filesystem), first_round=stage.first + 1,
        rounds=dec.rounds, seed=stage.plan.run.seed, verdict=dec.verdict, leader=dec.leader,
        ties=dec.ties, stopped=dec.stopped, units_run=dec.units_run,
        eliminated=tuple(r.label for r in dec.candidates if r.eliminated_round is not None),
        retired=tuple(r.label for r in dec.candidates if r.retired_round is not None),
        p_best={r.label: r.p_best for r in dec.candidates if r.p_best is not None
                and r.eliminated_round is None})


def _budget_stop(store, run_id: str, plan, last_first: int) -> str | None:
    """Why no next stage starts for the --budget: spent, or the last stage stopped because
    its next round would have overrun it (a new stage would run its first rounds past it)."""
    budget = plan.decide.budget_seconds
    if not budget:
        return None
    if RunEnvironment.of_run(store.run(run_id)).decide.budget_stop_after(last_first) is not None:
        return "the last stage stopped where its next round would have overrun the --budget"
    spent = sum(u["finished"] - u["started"] for u in store.units(run_id)
                if u.get("started") and u.get("finished"))
    return "the --budget is spent" if spent >= budget else None
