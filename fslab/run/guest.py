"""`fslab run --target guest`: run a whole plan inside one qemu guest, then merge.

The guest runs fslab itself (the same suites and drivers, from a copy of this
very source tree) on a virtio data disk with loop images, exactly as on a host.
One guest per run keeps boot cost (about 15 s under TCG) out of the
measurements and lets the scheduler interleave filesystems as usual.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tarfile
import time
from contextlib import closing
from pathlib import Path

from rich.console import Console
from rich.markup import escape

import fslab
from fslab import plan as plans
from fslab.system import state
from fslab.errors import FslabError
from fslab.guest import accel, cached_image, capable
from fslab.guest.image import ensure_image
from fslab.guest.merge import host_environment, merge
from fslab.guest.qemu import Guest
from fslab.plan import Plan
from fslab.plan.profiles import GiB, MiB, parse_size
from fslab.run.schedule import Schedule
from fslab.run.session import Executor, Outcome, RunSession, scratch_dir
from fslab.store import Store
from fslab.system.proc import which

GUEST_RESULTS = "/data/results"
GUEST_STORE = "guest.sqlite"   # the guest's own store, kept in the run's directory for --resume


def guest_label(accel_name: str) -> str:
    """The records' `host` for a guest: analysis compares it only with itself."""
    return f"guest-{accel_name}"


def data_disk_bytes(schedule) -> int:
    """Virtual size of the guest's data disk: room for the largest filesystem's images, twice.

    The file is sparse and the guest mounts it with discard, so generosity costs
    the host nothing until the bytes are written.
    """
    plan = schedule.plan
    largest = plan.profile.min_image_bytes
    for v in schedule.variants:
        spec = v.spec
        size = parse_size(spec.image_size) if spec.image_size else plan.profile.min_image_bytes
        # every case, even one this host would not run there: the guest judges for itself
        size = max([size, v.driver.min_bytes,
                    *(case.image_bytes for _, _, cases in schedule.suite_cases for case in cases)])
        largest = max(largest, size * spec.devices)
    size = max(16 * GiB, 3 * largest + 4 * GiB)
    return -(-size // MiB) * MiB   # whole MiB: cache=none (O_DIRECT) needs aligned sizes


def _copy_source(dest: Path) -> None:
    src = Path(fslab.__file__).resolve().parent
    shutil.copytree(src, dest / "fslab", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    # byte-compile here (same python 3.11 bytecode): the guest would recompile at every import
    import compileall
    compileall.compile_dir(dest / "fslab", quiet=1)


class GuestExecutor(Executor):
    """The whole plan in one qemu guest (its own fslab, local executor), merged back."""

    def check(self, session: RunSession) -> None:
        # refuse before a run row exists: a run that cannot build or boot a guest measured nothing
        if not which("qemu-system-x86_64"):
            raise FslabError("--target guest needs qemu-system-x86_64 (apt-get install "
                             "qemu-system-x86)")
        if cached_image() is None and (why := capable()):
            raise FslabError(f"--target guest cannot build its guest image here: {why}")

    def fs_names(self, plan: Plan) -> list[str]:
        return []   # filesystem tools are the guest's: recorded after the merge

    def target_info(self) -> dict:
        return {"kind": "guest"}

    def announce(self, session: RunSession) -> None:
        session.console.print(f"run [bold]{session.run_id}[/] (guest)")

    def execute(self, session: RunSession) -> Outcome:
        return run_in_guest(session.plan, session.store, session.run_id, session.console,
                            resume=bool(session.resume), schedule=session.schedule)


def run_in_guest(plan: Plan, store: Store, run_id: str, console: Console,
                 timeout_s: float | None = None, resume: bool = False,
                 schedule: Schedule | None = None) -> Outcome:
    """Run `plan` inside one guest and merge its records into `store` under `run_id`
    (`schedule`: the plan expanded, when the caller has it).

    The guest never outlives this call. Ctrl-C (or SIGTERM, or the time limit) asks the
    guest to stop as Ctrl-C would stop a local run, and what it measured is merged; a
    second Ctrl-C, or a guest that does not stop within FSLAB_GUEST_STOP_SECONDS, is
    killed. `fslab cleanup` finds the guest after a crash. With `resume`, the guest
    continues the store of the attempt that was interrupted (kept in the run's directory).
    """
    def log(msg: str) -> None:
        console.print(f"[dim]guest:[/] {escape(msg)}")

    timeout_s = timeout_s or float(os.environ.get("FSLAB_GUEST_TIMEOUT", 6 * 3600))
    image = ensure_image(log)
    verdict = accel.choose(image)
    label = guest_label(verdict["accel"])
    emulated = verdict["accel"] == "tcg"
    if emulated:
        probe = verdict.get("kvm_probe", {})
        console.print("[yellow]guest runs under TCG (software emulation)"
                      + (f": {probe['why']}" if probe.get("why") else "")
                      + "; absolute performance is emulated, compare guest filesystems only "
                      "with each other[/]")
    guest_info = {"accel": verdict["accel"], "emulated": emulated, "label": label,
                  "accel_probe": verdict, "kernel": image.kernel_release,
                  "image": image.describe()}
    store.update_environment(run_id, {"guest": guest_info, "target": {"kind": "guest"}})
    logdir = store.run_dir(run_id) / label
    seed = _earlier_attempt(store, run_id, logdir, log) if resume else None

    work = scratch_dir("fslab-guest-")
    state.note("dir", str(work))   # until the guest owns it: a failed setup leaves nothing
    try:
        guest = _prepare(schedule or Schedule.of(plan), image, verdict["accel"], work, logdir,
                         console, seed)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        state.forget("dir", str(work))
        raise
    t0 = time.monotonic()
    stopped = ""
    try:
        log(f"booting {image.kernel_release} ({verdict['accel']}, {guest.cpus} vCPU, "
            f"{guest.memory_mib} MiB); console log {guest.console_log}")
        guest.start()
        try:
            rc = guest.wait(timeout=timeout_s)
            if rc is None:
                stopped = f"the guest ran longer than {timeout_s:.0f}s (FSLAB_GUEST_TIMEOUT)"
        except KeyboardInterrupt:
            stopped = "interrupted"
        if stopped:
            rc = _stop(guest, work / "job", stopped, log)
        try:
            merged = _collect(guest, rc, work / "job" / "out", store, run_id, label,
                              round(time.monotonic() - t0, 1), log)
        except FslabError as e:
            if not stopped:
                raise
            log(f"nothing merged: {str(e).splitlines()[0]}")   # stopped before any result
            return _outcome(store, run_id, interrupted=True)
        if stopped or merged["status"] == "interrupted":
            return _outcome(store, run_id, interrupted=True)
        if merged["status"] not in ("finished", "finished-with-failures"):
            raise FslabError(f"the run inside the guest ended {merged['status']!r}; its "
                             f"console log: {guest.console_log}")
        return _outcome(store, run_id)
    except KeyboardInterrupt:
        return Outcome(interrupted=True)
    finally:
        guest.stop()                      # also removes `work` (the guest's scratch)
        state.forget("dir", str(work))


def _outcome(store: Store, run_id: str, interrupted: bool = False) -> Outcome:
    """What the run holds now (an earlier attempt's units included)."""
    units = [u["status"] for u in store.units(run_id)]
    return Outcome(done=units.count("done"), failed=units.count("failed"),
                   interrupted=interrupted)


def _stop(guest: Guest, job: Path, why: str, log) -> int | None:
    """Ask the guest's fslab to stop as Ctrl-C would, and wait for the guest to power off.

    Its current unit is torn down and what it measured is sent back. A second Ctrl-C
    (KeyboardInterrupt out of here) or the grace period's end leaves the guest to be killed.
    """
    grace = float(os.environ.get("FSLAB_GUEST_STOP_SECONDS", 300))
    (job / "stop").write_text(why)
    log(f"{why}: stopping the guest's run; it tears down its current unit and sends what it "
        f"measured (at most {grace:.0f}s; Ctrl-C again to kill it now)")
    rc = guest.wait(timeout=grace)
    if rc is None:
        log(f"the guest did not stop within {grace:.0f}s: killing it; its units are lost")
    return rc


def _collect(guest: Guest, rc: int | None, out: Path, store: Store, run_id: str, label: str,
             seconds: float, log) -> dict:
    """Merge what the guest sent (its agent writes status.json last) into `store`; keep the
    guest's own store beside the raw files so `--resume` can continue it."""
    status_file = out / "status.json"
    if not status_file.exists():
        tail = "\n".join(guest.lines[-15:])
        raise FslabError(f"the guest stopped (qemu exit {rc}) without finishing its job; "
                         f"last console lines:\n{tail}")
    gstatus = json.loads(status_file.read_text())
    results_tar = out / "results.tar"
    if not results_tar.exists():
        raise FslabError(f"the guest sent no results: {gstatus.get('error') or 'see the console log'}")
    with tarfile.open(results_tar) as tar:
        # the 'data' filter (Python >= 3.11.4) refuses paths outside and device files
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(out, **safe)
    merged = merge(store, run_id, out / "results", label)
    _keep_store(out / "results" / "fslab.sqlite", store.run_dir(run_id) / label / GUEST_STORE)
    store.update_environment(run_id, {
        "guest": {"facts": gstatus.get("facts", {}), "exit": gstatus.get("exit"),
                  "guest_run_id": merged["guest_run_id"], "wall_seconds": seconds,
                  "environment": merged["guest_environment"].as_dict()},
        **host_environment(merged["guest_environment"])})
    log(f"merged {merged['units']} units, {merged['records']} records as host {label!r} "
        f"({seconds:.0f}s in the guest, fslab exit {gstatus.get('exit')})")
    return merged


def _keep_store(src: Path, dest: Path) -> None:
    """Copy a SQLite store whole, whatever its write-ahead log still holds."""
    tmp = dest.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    with closing(sqlite3.connect(src)) as a, closing(sqlite3.connect(tmp)) as b:
        a.backup(b)
    os.replace(tmp, dest)


def _earlier_attempt(store: Store, run_id: str, logdir: Path, log) -> tuple[Path, str] | None:
    """(guest store, its run id) of this run's interrupted attempt on the same guest kind,
    or None: then the guest runs the whole plan again (an attempt under other acceleration
    keeps its own units, under its own host label)."""
    saved = logdir / GUEST_STORE
    grun = None
    if saved.exists():
        with closing(sqlite3.connect(f"file:{saved}?mode=ro", uri=True)) as db:
            row = db.execute("SELECT run_id FROM runs ORDER BY started DESC LIMIT 1").fetchone()
        grun = row[0] if row else None
    if grun:
        log(f"resuming the guest's run {grun}: its units done are kept")
        return saved, grun
    log(f"no stored attempt of this run under {logdir.name} (it was killed, or ran under "
        "other acceleration): the guest runs the whole plan")
    return None


def _prepare(schedule: Schedule, image, accel_name: str, work: Path, logdir: Path,
             console: Console, seed: tuple[Path, str] | None = None) -> Guest:
    """The job share (fslab's source, the plan or the store to resume, job.json), the
    data disk, and the Guest."""
    job = work / "job"
    (job / "src").mkdir(parents=True)
    _copy_source(job / "src")
    guest_plan = schedule.plan.model_copy(update={"target": {}, "hosts": None})
    (job / "plan.toml").write_text(plans.to_toml(guest_plan))
    data = work / "data.img"
    with open(data, "wb") as f:
        f.truncate(data_disk_bytes(schedule))
    what = ["/job/plan.toml"]
    if seed:
        shutil.copyfile(seed[0], job / "seed.sqlite")
        what = ["--resume", seed[1]]
    (job / "job.json").write_text(json.dumps({
        "argv": ["python3", "-m", "fslab", "run", *what, "--results", GUEST_RESULTS,
                 "--workdir", "/data/work", "--no-summary"],
        "data_disk": "/dev/vdb", "results": GUEST_RESULTS,
        "seed": "seed.sqlite" if seed else None,
        # plain output on the serial console; the guest's own state file
        "env": {"TERM": "dumb", "COLUMNS": "120", "NO_COLOR": "1", "FSLAB_STATE_DIR": "/run/fslab",
                "PYTHONUNBUFFERED": "1"},
    }))
    logdir.mkdir(parents=True, exist_ok=True)
    return Guest(image.kernel, image.initrd, accel_name, rootfs=image.rootfs,
                 data_disk=data, job_dir=job,
                 memory_mib=int(os.environ.get("FSLAB_GUEST_MEMORY_MIB", 2048)),
                 cpus=int(os.environ.get("FSLAB_GUEST_CPUS", min(2, os.cpu_count() or 1))),
                 console_log=logdir / "console.log",
                 on_line=lambda line: console.print(f"[dim]│[/] {escape(line)}", highlight=False),
                 scratch=[work])
