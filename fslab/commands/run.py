"""`fslab run`: provision, measure, store; then print the per-workload summary and verdicts."""
from __future__ import annotations

from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Iterator, Optional

import typer

from fslab import plan as plans
from fslab.run.flags import from_flags
from fslab.commands._common import ResultsOpt, console, existing_store, input_errors, results_dir
from fslab.errors import FslabError
from fslab.store import Store, open_store

# fslab modules are imported inside the commands: cli imports every command module at
# start-up, so what a command runs loads only when it runs (`fslab --help` stays fast)


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(
    plan_file: Optional[Path] = typer.Argument(None, help="Plan TOML (see plans/). Flags below override it."),
    fs: Optional[str] = typer.Option(None, "--fs", help="Comma-separated filesystems, e.g. ext4,xfs,btrfs,zfs "
                                     "(default). A variant with its own options: NAME:VARIANT[-o "
                                     "MOUNT,OPTS -m 'MKFS ARGS' -p PROP=VALUE -P POOLPROP=VALUE], "
                                     "e.g. 'ext4,ext4:wb[-o data=writeback]' or "
                                     "'zfs,zfs:8k[-p recordsize=8k]' (quote it for the shell; "
                                     "fslab options lists options worth trying). Options are tried "
                                     "on a scratch image before the run starts."),
    suite: Optional[str] = typer.Option(None, "--suite", help="Comma-separated suites (default: fio): fio, tasks, capacity, "
                                         "largefile, dedup, smallfiles, features, aging, integrity, enospc, "
                                         "crash (guest); applications: pgbench, sqlite, dbench, rocksdb."),
    profile: Optional[str] = typer.Option(None, "--profile", help="smoke | quick (default) | standard | paper."),
    iterations: Optional[int] = typer.Option(None, "--iterations", "-n",
                                             help="Rounds: each filesystem runs each case once a round "
                                             "(default: the profile's)."),
    adaptive: bool = typer.Option(False, "--adaptive", help="After the profile's rounds, repeat "
                                  "each case until every filesystem's 95% CI is within ±3% of its mean "
                                  "(plan: run.target_ci), at most run.max_iterations (30) rounds."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the randomized order (default 42)."),
    results: Optional[Path] = ResultsOpt,
    resume: Optional[str] = typer.Option(None, "--resume", help="Continue RUN_ID on the target it "
                                         "started on: done units are kept, unfinished ones "
                                         "redone."),
    fio: list[str] = typer.Option([], "--fio", help="fio job option KEY=VALUE for every fio job "
                                  "(repeatable; overrides the plan; runs as typed at every "
                                  "profile, which scales only the plan's own sizes and runtimes)."),
    job: list[Path] = typer.Option([], "--job", help="A fio job file to run on every filesystem "
                                   "(repeatable): \\[global], job sections, includes, groups, any engine "
                                   "that addresses files. Runs as written unless --profile is given "
                                   "(then sizes and runtimes are capped by the profile)."),
    replay: list[Path] = typer.Option([], "--replay", help="A replay file (fslab capture --out "
                                      "W.replay -- COMMAND...) to replay on every filesystem "
                                      "(repeatable): the command's file operations, as fast as "
                                      "possible. Plan: [[suite]] kind=\"replay\" file=\"W.replay\"."),
    pace: bool = typer.Option(False, "--pace", help="With --replay: issue each operation at its "
                              "captured time, not as fast as possible."),
    image_size: Optional[str] = typer.Option(None, "--image-size", help="Loop image size, e.g. 4G "
                                             "(default: sized from the workload; for --job files the jobs' "
                                             "sizes x numjobs plus headroom)."),
    mkfs_options: Optional[str] = typer.Option(None, "--mkfs-options", help="Extra mkfs options "
                                               "(quoted) for every filesystem; refused when variants "
                                               "differ (use --fs NAME:VARIANT[-m '...'])."),
    mount_options: Optional[str] = typer.Option(None, "--mount-options", help="Mount options, "
                                                "comma-separated, for every filesystem; refused when "
                                                "variants differ (use --fs NAME:VARIANT[-o ...])."),
    target: Optional[str] = typer.Option(None, "--target", help="loop (default) | device | mountpoint | guest."),
    device: Optional[str] = typer.Option(None, "--device", help="Block device for --target device."),
    destroy_data: Optional[str] = typer.Option(None, "--destroy-data", metavar="DEVICE",
                                               help="Confirm that DEVICE may be wiped (repeat its name)."),
    mountpoint: Optional[Path] = typer.Option(None, "--mountpoint", help="Test an existing mounted "
                                              "directory: no mkfs, no root needed."),
    workdir: Optional[Path] = typer.Option(None, "--workdir", help="Where loop images and mount points "
                                           "go (default: a temporary directory under /var/tmp)."),
    hosts: Optional[Path] = typer.Option(None, "--hosts", help="hosts.toml: run the fio suites on many "
                                         "hosts with fio's client/server mode."),
    page_cache: Optional[str] = typer.Option(None, "--page-cache", metavar="off|on",
                                             help="off: measure the device (direct I/O where the "
                                             "filesystem accepts it; default of smoke/quick/standard). "
                                             "on: buffered, as the studies ran (default of paper). "
                                             "Plan key: run.page_cache."),
    baseline: Optional[str] = typer.Option(None, "--baseline", metavar="raw",
                                           help="Also measure the bare device (raw) and show each "
                                           "filesystem's fio throughput as % of it."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print every case with its exact options, "
                                 "the filesystems, rounds and an estimated duration; run nothing."),
    as_json: bool = typer.Option(False, "--json", help="With --dry-run: print it as JSON."),
    summary: bool = typer.Option(True, "--summary/--no-summary", hidden=True,
                                 help="Print the summary and verdicts at the end (the guest "
                                 "target turns this off inside the guest: the host prints them)."),
) -> None:
    """Provision filesystems, run the workloads, store every result."""
    from fslab.run import validate
    with validate.as_input_errors():   # every input checked before a run row exists
        validate.flags(profile=profile, iterations=iterations, fio=fio, workdir=workdir,
                       image_size=image_size, target=target)
    schedule = None   # the plan expanded: by validation, or by the session of a resumed run
    if resume:
        store = existing_store(results)
        with input_errors():
            resume = store.run(resume)["run_id"]
        the_plan = plans.parse(store.run(resume)["plan"], f"stored plan of {resume}")
        if the_plan.decide is not None:
            raise FslabError(f"run {resume} is a decide (a race): resume it with "
                             f"fslab decide --resume {resume}")
    else:
        with validate.as_input_errors():
            the_plan = from_flags(plan_file, fs, suite, profile, iterations, seed, fio,
                                  mkfs_options, mount_options, adaptive, job, image_size,
                                  page_cache, baseline, replay=replay, pace=pace)
            schedule = validate.plan(the_plan)
    if resume:
        from fslab.run.session import resumed_target
        target, mountpoint = resumed_target(store.run(resume), target, device, mountpoint, hosts)
    if device:
        target = target or "device"
    if mountpoint:
        target = "mountpoint"
    target = target or the_plan.target.get("kind", "loop")
    if dry_run:
        _dry_run(the_plan, results, target, as_json, schedule)
        return
    executor = _executor(the_plan, target, hosts, device, destroy_data, mountpoint, workdir)
    from fslab.run.session import RunSession
    with nullcontext(store) if resume else _store_for_a_new_run(results_dir(results)) as store:
        RunSession(the_plan, store, console, resume=resume, schedule=schedule).run(
            executor, summary=summary)


@contextmanager
def _store_for_a_new_run(root: Path) -> Iterator[Store]:
    """The results store a new run writes to. A run refused before its run row (an option
    its filesystem rejects, a target it cannot use) leaves no store it created: a refused
    run writes nothing."""
    made_dir = not root.exists()
    made_db = not (root / "fslab.sqlite").exists()
    store = open_store(root)
    try:
        yield store
    except BaseException:
        if made_db and not store.runs():
            store.close()
            for suffix in ("", "-wal", "-shm", "-journal"):
                (root / f"fslab.sqlite{suffix}").unlink(missing_ok=True)
            if made_dir:
                with suppress(OSError):
                    root.rmdir()
        raise


def _executor(the_plan, target: str, hosts, device, destroy_data, mountpoint, workdir):
    """Where the units execute: fio hosts, one qemu guest, or here."""
    from fslab.workloads.support.jobfile import job_file_suites
    if job_file_suites(the_plan) and (hosts or the_plan.hosts or target in ("guest", "hosts")):
        raise FslabError("fio job files (--job, job_files) run on this host's filesystems only "
                         "for now: drop --hosts / --target guest, or run the file there")
    if hosts or the_plan.hosts or target == "hosts":
        from fslab.remote import HostsExecutor   # fio client/server
        return HostsExecutor(hosts)
    if target == "guest":
        from fslab.run.guest import GuestExecutor
        return GuestExecutor()
    from fslab.run.local import LocalExecutor
    return LocalExecutor(target, device=device, destroy_data=destroy_data,
                         mountpoint=mountpoint, workdir=workdir)


def _dry_run(the_plan, results, target: str, as_json: bool, schedule=None) -> None:
    """The plan expanded, nothing run; earlier runs in the results store (if it exists:
    a dry run creates nothing) give the durations."""
    from fslab.run.dryrun import outline, print_outline
    db = results_dir(results) / "fslab.sqlite"
    o = outline(the_plan, open_store(db.parent) if db.exists() else None, target, schedule)
    if as_json:
        import orjson
        from fslab import schema
        print(orjson.dumps(schema.stamp("dry-run", o), option=orjson.OPT_INDENT_2).decode())
    else:
        print_outline(o, console)
