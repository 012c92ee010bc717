"""`fslab decide`: which filesystem, with which options, for this workload: a race of
candidates (each filesystem at its defaults and each catalogue option varied alone, or
the user's own list), the significantly worse eliminated round by round, then further
stages in the same run (the options that helped, combined; docs/decide.md). This module
parses the flags and prints; fslab/run/decide.py runs the workflow."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from fslab.commands._common import ResultsOpt, console, err, results_dir
from fslab.decide.request import (DEFAULT_DELTA, DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_ROUNDS,
                                  DEFAULT_MAX_STAGES, DecideRequest)

# the workflow is imported inside the command: cli imports every command module at
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
    delta: float = typer.Option(DEFAULT_DELTA, "--delta", help="Indifference zone (default 0.03 = 3%): a "
                                "candidate shown not this much better than the leader stops "
                                "racing; all within it of the leader on both sides are a tie."),
    max_rounds: int = typer.Option(DEFAULT_MAX_ROUNDS, "--max-rounds", help="At most this many rounds (per stage)."),
    budget: Optional[str] = typer.Option(None, "--budget", help="Time budget of all stages, e.g. 20m "
                                         "or 1h: after a stage's first 3 rounds (which always "
                                         "run), no round starts that the rounds' average time says "
                                         "would end past it, and no stage starts after that or "
                                         "once it is spent."),
    max_candidates: int = typer.Option(DEFAULT_MAX_CANDIDATES, "--max-candidates", help="Most candidates one race takes: "
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
    stages: int = typer.Option(DEFAULT_MAX_STAGES, "--stages", help="At most this many stages: 1 races only what "
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
    from fslab.decide.decision import text
    from fslab.run.decide import run_decide
    request = DecideRequest(
        results=results_dir(results), plan_file=plan_file, fs=fs, candidates=candidates,
        options=options, allow=allow, job=tuple(job), replay=tuple(replay), suite=suite,
        metric=metric, delta=delta, max_rounds=max_rounds, budget=budget,
        max_candidates=max_candidates, profile=profile, fio=tuple(fio), image_size=image_size,
        seed=seed, resume=resume, workdir=workdir, stages=stages, keep_going=keep_going)
    # with --json, stdout holds the JSON alone
    outcome = run_decide(request, err if as_json else console)
    if as_json:
        import orjson
        print(orjson.dumps(outcome.decision.to_json(), option=orjson.OPT_INDENT_2).decode())
        return
    from fslab.decide.decision import verdict_line
    from fslab.report.headline import captures_of, with_capture
    from fslab.store.environment import RunEnvironment
    env = RunEnvironment.of_run(outcome.store.run(outcome.decision.run))
    for line in with_capture(text(outcome.decision), verdict_line(outcome.decision),
                             captures_of([env])):
        console.print(line, markup=False, highlight=False)
    console.print(f"every unit is stored: fslab report {outcome.decision.run} --results "
                  f"{outcome.store.root}", markup=False, highlight=False)
