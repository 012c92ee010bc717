"""The local executor: this host's filesystems, on loop images, a device or a mount point,
run unit by unit by the scheduler (fslab/run/scheduler.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

from fslab.errors import FslabError
from fslab.plan import FilesystemSpec, Plan
from fslab.run.diskspace import check_room
from fslab.run.schedule import Schedule, too_few_rounds
from fslab.run.session import Executor, Outcome, RunSession, scratch_dir, tmp_base
from fslab.system import state
from fslab.system.proc import is_root
from fslab.run.probe import probe_plan
from fslab.workloads import scales_a_study
from fslab.workloads.support.jobfile import environment_of
from fslab.run.scheduler import execute
from fslab.targets.loop import LoopTarget, backing_device_of, remove_reused
from fslab.targets.blockdev import DeviceTarget
from fslab.targets.mountpoint import MountpointTarget
from fslab.system.mounts import is_mounted


class LocalExecutor(Executor):
    def __init__(self, target: str, *, device: str | None = None,
                 destroy_data: str | None = None, mountpoint: Path | None = None,
                 workdir: Path | None = None, rounds_policy=None,
                 probed: dict[str, dict] | None = None):
        self.kind, self.device, self.destroy_data = target, device, destroy_data
        self.mountpoint, self.workdir = mountpoint, workdir
        # more rounds after the plan's (fslab decide's race: fslab/run/scheduler.py)
        self.rounds_policy = rounds_policy
        # the options probe's findings, per variant (given: the caller probed already)
        self.probed: dict[str, dict] = probed or {}
        self._probe = probed is None

    def check(self, session: RunSession) -> None:
        if self.kind != "mountpoint" and not is_root():
            raise FslabError("fslab run needs root to create loop devices and mount filesystems: "
                             "run it as root, or pass --mountpoint DIR to test an existing directory")
        self.make_target, self.mountpoint_dir, self.info = _target_factory(
            self.kind, self.device, self.destroy_data, self.mountpoint, self.workdir, session.plan)
        self.schedule = session.schedule
        if self.mountpoint_dir is not None:   # measure what is mounted there, whatever the plan said
            mounted = session.plan.model_copy(update={"filesystem": [
                FilesystemSpec(name=self.info["fstype"], variant="existing")]})
            self.schedule = Schedule.of(mounted, existing=True)
            session.measure_instead(mounted, self.schedule)
            return
        if self.kind == "loop":    # before any run row: an image that cannot fit fails late
            check_room(session.schedule, self.workdir or tmp_base())
        if not self._probe:
            return
        # every variant's own options, tried on a scratch loop image (never --device's disk)
        self.probed = probe_plan(session.schedule, lambda line: session.console.print(
            line, markup=False, highlight=False))

    def target_info(self) -> dict:
        return self.info

    def environment(self, plan: Plan) -> dict:
        jobs = environment_of(self.schedule)
        env = {"job_files": jobs} if jobs else {}
        if self.probed:   # what the options probe read back, per variant
            env["options_probe"] = self.probed
        return env

    def announce(self, session: RunSession) -> None:
        from rich.markup import escape
        p, console = session.plan, session.console
        console.print(f"run [bold]{session.run_id}[/]: {escape(', '.join(f.label for f in p.filesystem))} × "
                      f"{', '.join(s.kind for s in p.suite)}, profile {p.run.profile}"
                      f"{' (scaled down from the studies)' if scales_a_study(p) else ''}, "
                      + (f"a race of at most {p.decide.max_rounds} rounds (the first "
                         f"{p.iterations} always run)" if p.decide else
                         f"{p.iterations} round{'' if p.iterations == 1 else 's'}")
                      + (f" then adaptive (CI ±{p.run.target_ci:.0%}, at most "
                         f"{p.run.max_iterations})" if p.run.adaptive else "")
                      + f"; results in {session.store.root}")
        for name, how in environment_of(session.schedule).items():
            console.print(f"job file {name}: sizes and runtimes {how['sizes_and_runtimes']}")
            for note in how.get("notes", ()):
                console.print(f"[yellow]note:[/] job file {name}: {escape(note)}")
        if (few := too_few_rounds(p)):
            console.print(f"[yellow]note:[/] {few}")

    def execute(self, session: RunSession) -> Outcome:
        if self.rounds_policy is not None:
            self.rounds_policy.run_id = session.run_id
        wd = self.workdir or scratch_dir("fslab-")
        if not self.workdir:
            state.note("dir", str(wd))
        try:
            return execute(session.schedule, session.store, session.run_id,
                           make_target=lambda: self.make_target(wd), workdir=wd,
                           console=session.console, mountpoint_dir=self.mountpoint_dir,
                           rounds_policy=self.rounds_policy)
        finally:
            if self.kind == "loop":
                remove_reused(wd)
            if not self.workdir:
                if not any(is_mounted(str(p)) for p in wd.glob("mnt-*")):
                    shutil.rmtree(wd, ignore_errors=True)
                    state.forget("dir", str(wd))


def _target_factory(target: str, device, destroy_data, mountpoint, workdir, plan: Plan):
    """(make_target(workdir), mountpoint dir or None, description) for the chosen target kind."""
    if target == "loop":

        def make(wd: Path):   # images go in the run's work directory
            return LoopTarget(wd, direct_io=plan.run.loop_direct_io, image=plan.image)
        info = {"kind": "loop", "backing": backing_device_of(str(workdir or tmp_base()))}
        return make, None, info
    if target == "device":
        dev = device or plan.target.get("path")
        if not dev:
            raise FslabError("--target device needs --device /dev/XYZ")
        t = DeviceTarget(dev, destroy_data)   # refuses (exit 2) before anything is touched
        return (lambda wd: t), None, t.describe()
    if target == "mountpoint":
        if not mountpoint:
            raise FslabError("--target mountpoint needs --mountpoint DIR")
        t = MountpointTarget(str(mountpoint))
        return (lambda wd: t), Path(mountpoint), t.describe()
    raise FslabError(f"unknown target {target!r}: loop, device, mountpoint or guest")
