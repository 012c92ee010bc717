"""`fslab run`: provision, measure, store; then print the per-workload summary and verdicts."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Optional

import typer

from fslab import plan as plans
from fslab.system import state, teardown
from fslab.commands._common import ResultsOpt, console, results_dir
from fslab.errors import FslabError
from fslab.system.proc import is_root
from fslab.run.session import create_run, run_environment, scratch_dir, tmp_base
from fslab.store import open_store


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(
    plan_file: Optional[Path] = typer.Argument(None, help="Plan TOML (see plans/). Flags below override it."),
    fs: Optional[str] = typer.Option(None, "--fs", help="Comma-separated filesystems, e.g. ext4,xfs,btrfs,zfs "
                                     "(NAME:VARIANT allowed). Default: ext4,xfs,btrfs,zfs."),
    suite: Optional[str] = typer.Option(None, "--suite", help="Comma-separated suites (default: fio): fio, tasks, capacity, "
                                         "largefile, dedup, smallfiles, features, aging, integrity, enospc, "
                                         "crash (guest)."),
    profile: Optional[str] = typer.Option(None, "--profile", help="smoke | quick (default) | standard | paper."),
    iterations: Optional[int] = typer.Option(None, "--iterations", "-n",
                                             help="Repetitions (default: the profile's)."),
    adaptive: bool = typer.Option(False, "--adaptive", help="After the profile's iterations, repeat "
                                  "each case until every filesystem's 95% CI is within ±3% of its mean "
                                  "(plan: run.target_ci), at most run.max_iterations (30) rounds."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the randomized order (default 42)."),
    results: Optional[Path] = ResultsOpt,
    resume: Optional[str] = typer.Option(None, "--resume", help="Continue RUN_ID: done units are kept, "
                                         "unfinished ones redone."),
    fio: list[str] = typer.Option([], "--fio", help="fio job option KEY=VALUE for every fio job "
                                  "(repeatable; overrides the plan)."),
    job: list[Path] = typer.Option([], "--job", help="A fio job file to run on every filesystem "
                                   "(repeatable): \\[global], job sections, includes, groups, any engine "
                                   "that addresses files. Runs as written unless --profile is given "
                                   "(then sizes and runtimes are capped by the profile)."),
    image_size: Optional[str] = typer.Option(None, "--image-size", help="Loop image size, e.g. 4G "
                                             "(default: sized from the workload; for --job files the jobs' "
                                             "sizes x numjobs plus headroom)."),
    mkfs_options: Optional[str] = typer.Option(None, "--mkfs-options", help="Extra mkfs options (quoted)."),
    mount_options: Optional[str] = typer.Option(None, "--mount-options", help="Mount options, comma-separated."),
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
                                 "the filesystems, iterations and an estimated duration; run nothing."),
    as_json: bool = typer.Option(False, "--json", help="With --dry-run: print it as JSON."),
    summary: bool = typer.Option(True, "--summary/--no-summary", hidden=True,
                                 help="Print the summary and verdicts at the end (the guest "
                                 "target turns this off inside the guest: the host prints them)."),
) -> None:
    """Provision filesystems, run the workloads, store every result."""
    from fslab.plan import validate
    with validate.as_input_errors():   # every input checked before a run row exists
        validate.flags(profile=profile, iterations=iterations, fio=fio, workdir=workdir,
                       image_size=image_size, target=target)
    if resume:
        store = open_store(results_dir(results))
        run_id = store.run(resume)["run_id"]
        the_plan = plans.parse(store.run(run_id)["plan"], f"stored plan of {run_id}")
    else:
        with validate.as_input_errors():
            the_plan = _build_plan(plan_file, fs, suite, profile, iterations, seed, fio,
                                   mkfs_options, mount_options, adaptive, job, image_size)
            _apply_cache_and_baseline(the_plan, page_cache, baseline)
            validate.plan(the_plan)
    if device:
        target = target or "device"
    if mountpoint:
        target = "mountpoint"
    target = target or the_plan.target.get("kind", "loop")
    if dry_run:
        _dry_run(the_plan, results, target, as_json)
        return
    if not resume:
        store = open_store(results_dir(results))

    from fslab.fio.jobfile import environment_of, job_file_suites
    if job_file_suites(the_plan) and (hosts or the_plan.hosts or target == "guest"):
        raise FslabError("fio job files (--job, job_files) run on this host's filesystems only "
                         "for now: drop --hosts / --target guest, or run the file there")
    if hosts or the_plan.hosts:
        if the_plan.run.adaptive:
            raise FslabError("adaptive iterations are not supported across hosts yet: "
                             "give a fixed --iterations N")
        from fslab.remote import run_on_hosts   # issue 8: fio client/server
        run_on_hosts(the_plan, store, hosts, console=console, resume=resume)
        return
    if target == "guest":
        from fslab.guest import run_in_guest
        # filesystem tools are the guest's: the runner records them after the merge
        run_id = resume or create_run(store, the_plan,
                                      run_environment(the_plan, [], {"kind": "guest"}))
        console.print(f"run [bold]{run_id}[/] (guest)")
        run_in_guest(the_plan, store, run_id, console)
        _after(store, run_id)
        return

    if target != "mountpoint" and not is_root():
        raise FslabError("fslab run needs root to create loop devices and mount filesystems: "
                         "run it as root, or pass --mountpoint DIR to test an existing directory")
    make_target, mp_dir, target_info = _target_factory(target, device, destroy_data, mountpoint,
                                                       workdir, the_plan)
    if mp_dir is not None:   # measure what is mounted there, whatever the plan said
        fstype = target_info["fstype"]
        from fslab.plan import FilesystemSpec
        the_plan.filesystem = [FilesystemSpec(name=fstype, variant="existing")]
    teardown.cleanup(only_dead_owners=True)   # leftovers of crashed runs would skew this one
    if not resume:
        env = run_environment(the_plan, [f.name for f in the_plan.filesystem], target_info)
        if environment_of(the_plan):
            env["job_files"] = environment_of(the_plan)
        run_id = create_run(store, the_plan, env)
    else:
        store.set_status(run_id, "running")
    console.print(f"run [bold]{run_id}[/]: {', '.join(f.label for f in the_plan.filesystem)} × "
                  f"{', '.join(s.kind for s in the_plan.suite)}, profile {the_plan.run.profile}"
                  f"{' (scaled down from the studies)' if the_plan.profile.scaled else ''}, "
                  f"{the_plan.iterations} iterations"
                  + (f" then adaptive (CI ±{the_plan.run.target_ci:.0%}, at most "
                     f"{the_plan.run.max_iterations})" if the_plan.run.adaptive else "")
                  + f"; results in {store.root}")
    for name, how in environment_of(the_plan).items():
        console.print(f"job file {name}: sizes and runtimes {how['sizes_and_runtimes']}")
    from fslab.run.dryrun import too_few_rounds
    if (few := too_few_rounds(the_plan)):
        console.print(f"[yellow]note:[/] {few}")
    from fslab.run.scheduler import execute, finish_run
    wd = Path(workdir) if workdir else scratch_dir("fslab-")
    state.note("dir", str(wd)) if not workdir else None
    try:
        out = execute(the_plan, store, run_id, make_target=lambda: make_target(wd), workdir=wd,
                      console=console, mountpoint_dir=mp_dir)
    finally:
        if not workdir:
            import shutil
            from fslab.system.teardown import is_mounted
            if not any(is_mounted(str(p)) for p in wd.glob("mnt-*")):
                shutil.rmtree(wd, ignore_errors=True)
                state.forget("dir", str(wd))
    finish_run(store, run_id, out, console)
    if summary:
        _after(store, run_id)
    if out.failed and not out.done and not out.skipped:
        raise typer.Exit(1)   # nothing was measured: a failure, whatever the summary says


def _dry_run(the_plan, results, target: str, as_json: bool) -> None:
    """The plan expanded, nothing run; earlier runs in the results store (if it exists:
    a dry run creates nothing) give the durations."""
    from fslab.run.dryrun import outline, print_outline
    db = results_dir(results) / "fslab.sqlite"
    o = outline(the_plan, open_store(db.parent) if db.exists() else None, target)
    if as_json:
        import orjson
        print(orjson.dumps(o, option=orjson.OPT_INDENT_2).decode())
    else:
        print_outline(o, console)


def _after(store, run_id: str) -> None:
    from fslab.run.summary import print_run_summary
    print_run_summary(store, run_id, console)
    try:
        from fslab.report.terminal import print_verdicts
    except ImportError:
        return
    if not store.units(run_id) or all(u["status"] != "done" for u in store.units(run_id)):
        return   # nothing finished: the summary above said why; no verdict to give
    print_verdicts(store, [run_id], console)
    from fslab.report.claims import claims_json, print_claims   # "The study said -> here"
    print_claims(claims_json(store.run(run_id), store.records([run_id])), console)


def _apply_cache_and_baseline(the_plan, page_cache: str | None, baseline: str | None) -> None:
    """--page-cache and --baseline raw, written into the plan so the stored plan says them."""
    from fslab.run.cachepolicy import POLICIES
    if page_cache is None and baseline is None:
        return
    if page_cache is not None:
        if page_cache not in POLICIES:
            raise FslabError(f"--page-cache {page_cache!r}: choose off or on")
        the_plan.run.page_cache = page_cache
    if baseline is not None:
        if baseline != "raw":
            raise FslabError(f"--baseline {baseline!r}: the only baseline is raw (the bare device)")
        if not any(f.name == "raw" for f in the_plan.filesystem):
            the_plan.filesystem.append(plans.FilesystemSpec(name="raw"))
    the_plan.source_text = plans.to_toml(the_plan)


def _build_plan(plan_file, fs, suite, profile, iterations, seed, fio, mkfs_options, mount_options,
                adaptive=False, job=(), image_size=None):
    p = _build_plan_without_jobs(plan_file, fs, suite, profile, iterations, seed, fio, mkfs_options,
                                 mount_options, adaptive, bool(job))
    if image_size and not job:   # every filesystem's loop image (job files size their own)
        for f in p.filesystem:
            f.image_size = image_size
        p.source_text = plans.to_toml(p)
    from fslab.fio.jobfile import add_job_files
    fio_opts = dict(item.partition("=")[::2] for item in fio)   # checked by the call above
    if add_job_files(p, job, image_size if job else None, profile_explicit=bool(profile) or (
            plan_file is not None and "profile" in p.run.model_fields_set),
            fio_options={k.strip(): v.strip() for k, v in fio_opts.items()}):
        p.source_text = plans.to_toml(p)   # the stored plan names the files by absolute path
    return p


def _build_plan_without_jobs(plan_file, fs, suite, profile, iterations, seed, fio, mkfs_options,
                             mount_options, adaptive, have_jobs):
    fio_opts = {}
    for item in fio:
        k, sep, v = item.partition("=")
        if not sep:
            raise FslabError(f"--fio {item!r}: expected KEY=VALUE")
        fio_opts[k.strip()] = v.strip()
    mkfs = shlex.split(mkfs_options) if mkfs_options else None
    mnt = [o for o in mount_options.split(",") if o] if mount_options else None
    if plan_file:
        p = plans.load(plan_file)
        if fs:   # keep the plan's variants of the named filesystems, add plain ones otherwise
            wanted = [x.strip() for x in fs.split(",") if x.strip()]
            kept = [f for f in p.filesystem if f.name in wanted or f.label in wanted]
            have = {f.name for f in kept}
            kept += [plans.FilesystemSpec(name=w.partition(":")[0], variant=w.partition(":")[2] or "default")
                     for w in wanted if w.partition(":")[0] not in have]
            p.filesystem = kept
        if suite:
            wanted = [x.strip() for x in suite.split(",")]
            p.suite = [s for s in p.suite if s.kind in wanted] + \
                [plans.SuiteSpec(kind=w) for w in wanted if w not in {s.kind for s in p.suite}]
        if profile:
            p.run.profile = plans.RunSection(profile=profile).profile
        if iterations:
            p.run.iterations = iterations
        if seed is not None:
            p.run.seed = seed
        if adaptive:
            p.run.adaptive = True
        for f in p.filesystem:
            if mkfs:
                f.mkfs_options = [*f.mkfs_options, *mkfs]
            if mnt:
                f.mount_options = [*f.mount_options, *mnt]
        if fio_opts:   # --fio wins over the plan, at every profile (its overlays too)
            for s in p.suite:
                if s.kind == "fio":
                    merged = {**(s.options.get("fio") or {}), **fio_opts}
                    setattr(s, "fio", merged)
                    s.model_extra["fio"] = merged
                    for overlay in ((s.model_extra.get("profiles") or {}).values()):
                        if isinstance(overlay, dict) and "fio" in overlay:
                            overlay["fio"] = {**overlay["fio"], **fio_opts}
        if not p.filesystem:
            p.filesystem = [plans.FilesystemSpec(name=n) for n in ("ext4", "xfs", "btrfs", "zfs")]
        if not p.suite and not have_jobs:
            p.suite = [plans.SuiteSpec(kind="fio")]
        text = p.source_text
        changed = any([fs, suite, profile, iterations, seed is not None, mkfs, mnt, fio_opts,
                       adaptive])
        p.source_text = plans.to_toml(p) if changed else text
        p.check_unique_variants()
        return p
    fs_list = [x.strip() for x in (fs or "ext4,xfs,btrfs,zfs").split(",") if x.strip()]
    suites = [x.strip() for x in (suite or ("" if have_jobs else "fio")).split(",") if x.strip()]
    return plans.from_cli(fs_list, suites, profile or "quick", iterations,
                          42 if seed is None else seed, mkfs, mnt, fio_opts, adaptive)


def _target_factory(target, device, destroy_data, mountpoint, workdir, the_plan):
    """(make_target(), mountpoint dir or None, description) for the chosen target kind."""
    if target == "loop":
        from fslab.targets.loop import LoopTarget, backing_device_of

        def make(wd: Path): return LoopTarget(wd)   # images go in the run's work directory
        info = {"kind": "loop", "backing": backing_device_of(str(workdir or tmp_base()))}
        return make, None, info
    if target == "device":
        from fslab.targets.blockdev import DeviceTarget
        dev = device or the_plan.target.get("path")
        if not dev:
            raise FslabError("--target device needs --device /dev/XYZ")
        t = DeviceTarget(dev, destroy_data)   # refuses (exit 2) before anything is touched
        return (lambda wd: t), None, t.describe()
    if target == "mountpoint":
        from fslab.targets.mountpoint import MountpointTarget
        if not mountpoint:
            raise FslabError("--target mountpoint needs --mountpoint DIR")
        t = MountpointTarget(str(mountpoint))
        return (lambda wd: t), Path(mountpoint), t.describe()
    raise FslabError(f"unknown target {target!r}: loop, device, mountpoint or guest")
