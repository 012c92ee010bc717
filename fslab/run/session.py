"""A run's lifecycle, written once for every way a run executes.

`RunSession.run(executor)` owns plan -> run row -> executor -> final status -> summary;
an `Executor` says how units execute: here (fslab/run/local.py), in one qemu guest
(fslab/run/guest.py) or on fio client/server hosts (fslab/remote/). What all of
them must do alike lives here so they cannot drift: every run records the same
environment (profile, page-cache policy), SIGTERM stops a run the way Ctrl-C does,
scratch directories live in one place, every driver used gets its session end (e.g.
the zfs-fuse daemon is stopped) even after failures, and the exit code means the same.
"""
from __future__ import annotations

import os
import shlex
import signal
import sys
import tempfile
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from rich.console import Console

from fslab import filesystems
from fslab.errors import FslabError
from fslab.plan import Plan
from fslab.run.schedule import Schedule
from fslab.store import Store
from fslab.store.environment import RunEnvironment
from fslab.system import environment, teardown
from fslab.run.summary import print_run_summary


def _interrupt(signum, frame):
    raise KeyboardInterrupt


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM takes the same clean teardown path as Ctrl-C while the block runs."""
    old = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def tmp_base() -> Path:
    """Where scratch directories go: /var/tmp (disk, survives a reboot for `fslab cleanup`)
    when writable, else the system temp dir."""
    return Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path(tempfile.gettempdir())


def scratch_dir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix, dir=tmp_base()))


def end_driver_sessions(names: Iterable[str], on_error: Callable[[str], None]) -> None:
    """Each driver's session end (if it has one); an error is reported, the others still run."""
    for name in names:
        end = getattr(filesystems.get(name), "session_end", None)
        if end:
            try:
                end()
            except Exception as e:
                on_error(f"{name} session end: {e}")


def run_environment(plan: Plan, fs_names: list[str], target: dict) -> dict:
    """What every run records of where and how it ran: the host, its tools for `fs_names`,
    the target, the profile and the page-cache policy."""
    env = environment.capture(filesystems.tool_versions(fs_names), target)
    env["profile"] = {"name": plan.profile.name, "scaled": plan.profile.scaled,
                      "description": plan.profile.description}
    env["page_cache"] = plan.page_cache
    # how each unit starts (bench/noise measured what quiets a unit: docs/statistics.md)
    env["units"] = {"settle": plan.settle, "design": plan.design,
                    **({"slice_ms": plan.run.slice_ms} if plan.design == "sliced" else {}),
                    **({"image": plan.image, "loop_direct_io": plan.run.loop_direct_io}
                       if target.get("kind", "loop") == "loop" else {})}
    return env


def create_run(store: Store, plan: Plan, env: dict) -> str:
    """A new run row for `plan`, with the command line that started it."""
    return store.create_run(plan.source_text, env, name=plan.run.name,
                            command=shlex.join(["fslab", *sys.argv[1:]]),
                            profile=plan.run.profile)


@dataclass
class Outcome:
    """What an executor did: units done and failed, units kept from an earlier attempt,
    and whether Ctrl-C/SIGTERM stopped it."""
    done: int = 0
    failed: int = 0
    skipped: int = 0
    interrupted: bool = False


class Executor(ABC):
    """One way a run executes: the local scheduler, one qemu guest, or fio hosts.

    The session calls, in order: `check` (refuse before a run row exists), `fs_names` /
    `target_info` / `environment` (what the run row records), `announce`, `execute`,
    then `summarise`. Everything else of the lifecycle is the session's."""

    def check(self, session: RunSession) -> None:
        """Raise FslabError if this run cannot start here; nothing is recorded yet."""

    def fs_names(self, plan: Plan) -> list[str]:
        """Filesystems whose tools (mkfs versions, ...) the run's environment records."""
        return [f.name for f in plan.filesystem]

    @abstractmethod
    def target_info(self) -> dict:
        """The environment's `target` entry: where the filesystems live."""

    def environment(self, plan: Plan) -> dict:
        """Extra environment keys of a new run (job files, hosts, ...)."""
        return {}

    def announce(self, session: RunSession) -> None:
        """The line that opens the run's output."""
        session.console.print(f"run [bold]{session.run_id}[/]")

    @abstractmethod
    def execute(self, session: RunSession) -> Outcome:
        """Run the plan's units; catch KeyboardInterrupt into Outcome.interrupted."""

    def summarise(self, session: RunSession) -> None:
        """What the user reads after the run: summary, verdicts, study claims."""
        print_results(session.store, session.run_id, session.console)


class RunSession:
    """One run, from plan to final status: the run row (new or resumed), leftovers of
    crashed runs cleaned first, SIGTERM as Ctrl-C, the final status, the summary, and
    the exit code: 130 when interrupted (with the command that resumes it), 1 when
    nothing could be measured."""

    def __init__(self, plan: Plan, store: Store, console: Console, *, resume: str | None = None,
                 schedule: Schedule | None = None):
        self.plan, self.store, self.console = plan, store, console
        # the plan expanded once (validation made it already for a new run)
        self.schedule: Schedule = schedule or Schedule.of(plan)
        self.resume = resume
        self.run_id: str = resume or ""

    def measure_instead(self, plan: Plan, schedule: Schedule) -> None:
        """What runs in place of the plan as given (a mount point's own filesystem): a new
        plan and its schedule; the run row still stores the plan text as given."""
        self.plan, self.schedule = plan, schedule

    def run(self, executor: Executor, *, summary: bool = True) -> str:
        executor.check(self)
        teardown.cleanup(only_dead_owners=True)   # leftovers of crashed runs would skew this one
        if self.resume:
            self.store.set_status(self.run_id, "running")
        else:
            env = run_environment(self.plan, executor.fs_names(self.plan), executor.target_info())
            self.run_id = create_run(self.store, self.plan, env | executor.environment(self.plan))
        executor.announce(self)
        try:
            with sigterm_as_interrupt():
                out = executor.execute(self)
        except KeyboardInterrupt:   # before the executor could catch it (e.g. while it prepared)
            out = Outcome(interrupted=True)
        except BaseException:
            self.store.set_status(self.run_id, "failed")
            raise
        finish_run(self.store, self.run_id, out, self.console)
        if summary:
            executor.summarise(self)
        if out.failed and not out.done and not out.skipped:
            import typer
            raise typer.Exit(1)   # nothing was measured: a failure, whatever the summary says
        return self.run_id


def resumed_target(run: dict, target: str | None, device: str | None,
                   mountpoint: Path | None, hosts: Path | None) -> tuple[str, Path | None]:
    """(target kind, mount point) a resumed run continues on: the one it started on.

    Units of one run measured on two targets (a loop image and a guest, say) would be
    compared as if alike, so a flag naming another target is refused. A device must be
    named again with --destroy-data: resuming is no proof that it may still be wiped.
    """
    env = RunEnvironment.of_run(run)
    where, kind = env.target, env.target_kind
    asked = ("hosts" if hosts else "mountpoint" if mountpoint else
             "device" if device else target)
    if asked and asked != kind:
        raise FslabError(f"run {run['run_id']} ran on the {kind} target, not {asked}: it "
                         f"resumes there (fslab run --resume {run['run_id']}"
                         + (f" --device {where.get('device')} --destroy-data {where.get('device')}"
                            if kind == "device" else "") + ")")
    if kind == "device" and device and where.get("device") and device != where["device"]:
        raise FslabError(f"run {run['run_id']} ran on {where['device']}, not {device}: its "
                         "units would compare two devices")
    if kind == "device" and not device:
        dev = where.get("device", "DEVICE")
        raise FslabError(f"run {run['run_id']} ran on {dev}: resume it with --device {dev} "
                         f"--destroy-data {dev} (confirm again that it may be wiped)")
    if kind == "mountpoint" and not mountpoint:
        mountpoint = Path(where["directory"])
    return kind, mountpoint


def finish_run(store: Store, run_id: str, out: Outcome, console: Console) -> None:
    """Record the run's final status and say it; an interrupted run exits 130 with the
    command that resumes it."""
    status = ("interrupted" if out.interrupted else
              "finished" if not out.failed else "finished-with-failures")
    store.set_status(run_id, status)
    console.print(f"run [bold]{run_id}[/] {status}: {out.done} units done, {out.failed} failed"
                  + (f", {out.skipped} kept from before" if out.skipped else ""))
    if out.interrupted:
        import typer
        plan_text = store.run(run_id).get("plan") or ""
        command = "decide" if "[decide]" in plan_text else "run"   # a race resumes as a race
        console.print(f"resume with: fslab {command} --resume {run_id} --results {store.root}")
        raise typer.Exit(130)


def print_results(store: Store, run_id: str, console: Console) -> None:
    """The run's summary, then its verdicts and the studies' claims re-derived (when any
    unit finished: otherwise the summary already said why there is no verdict)."""
    verdicts = any(u["status"] == "done" for u in store.units(run_id))
    # the answer lists the failed units: the summary does when no answer follows
    print_run_summary(store, run_id, console, failures=not verdicts)
    if not verdicts:
        return
    # here, not at the top: pandas and scipy load only when this runs
    from fslab.report.terminal import print_verdicts
    print_verdicts(store, [run_id], console)
    from fslab.report.claims import claims_json, print_claims   # "The study said -> here"
    print_claims(claims_json(store.run(run_id), store.records([run_id])), console)
