"""Running a plan's fio cases on many hosts, in the scheduler's seeded interleaved order.

A *group* is one (fs variant, fio case, iteration) of the plan; each host has its own
unit in it (record host = the host's name). Per group:
  each      one host after another, in a seeded order: prepare, fio --client, release
  parallel  prepare on every host, one fio invocation with every host, release;
            fio's "All clients" sum becomes the unit of host "all"
A host that fails (preparation, fio, a lost connection) fails its own unit; the others
go on. On --resume, `each` redoes exactly the units not done; `parallel` redoes a group
with every host together, because values measured side by side are only comparable
(and only sum to the aggregate) when they come from the same invocation.
"""
from __future__ import annotations

import dataclasses
import os
import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from rich.console import Console

from fslab.errors import FslabError, StepFailed
from fslab.plan import Plan
from fslab.records import AGGREGATE_HOST, Measurement, UnitKey, stamp
from fslab.remote.client import ClientRun, Endpoint, run_clients
from fslab.remote.hosts import HostSpec, HostsFile
from fslab.remote.ssh import HostLost
from fslab.run.schedule import Unit
from fslab.store import Store
from fslab.workloads.fio import job_text


@dataclass
class HostSession:
    spec: HostSpec
    ops: object | None = None        # LocalHost or AgentHost (the same operations)
    endpoint: Endpoint | None = None     # where fio's client reaches its server
    down: str | None = None          # why nothing can run on this host any more


@dataclass
class _Slot:
    """One host's unit inside a group being run."""
    session: HostSession
    key: UnitKey
    rel: str                         # artifact dir, relative to the results root
    label: str = ""
    job: Path | None = None
    error: str | None = None
    measurements: list[Measurement] = field(default_factory=list)


class GroupRunner:
    def __init__(self, plan: Plan, store: Store, run_id: str, hosts: HostsFile,
                 sessions: dict[str, HostSession], console: Console):
        self.plan, self.store, self.run_id, self.hosts = plan, store, run_id, hosts
        self.sessions, self.console = sessions, console
        self.described: set[tuple[str, str]] = set()

    # what to run ----------------------------------------------------------------
    def pending(self, unit: Unit, status: dict[UnitKey, str]) -> list[list[str]]:
        """The fio invocations this group still needs, each a list of host names."""
        names = [h.name for h in self.hosts.host]
        k = unit.key   # the seed string predates swept values in labels: kept, so orders stay
        random.Random(f"{self.plan.run.seed}:{k.iteration}:{k.fs}/{k.variant} {k.suite}:{k.case} "
                      f"#{k.iteration}").shuffle(names)
        undone = [n for n in names if status.get(self.key(unit, n)) != "done"]
        if self.hosts.mode == "each":
            return [[n] for n in undone]
        needs_sum = len(names) > 1 and status.get(self.key(unit, AGGREGATE_HOST)) != "done"
        return [names] if undone or needs_sum else []

    @staticmethod
    def key(unit: Unit, host: str) -> UnitKey:
        return dataclasses.replace(unit.key, host=host)

    # one invocation ---------------------------------------------------------------
    def run(self, unit: Unit, names: list[str]) -> tuple[int, int]:
        """Prepare, measure and release on `names` at once; store every unit. (done, failed)"""
        slots = [self._slot(unit, n) for n in names]
        started = time.time()
        try:
            for s in slots:
                self._prepare(unit, s)
            ready = [s for s in slots if s.error is None]
            result = self._measure(unit, ready) if ready else None
        finally:
            for s in slots:
                self._release(unit, s)
        results = [self._finish(s, started) for s in slots]
        if self.hosts.mode == "parallel" and len(self.hosts.host) > 1:
            results.append(self._finish_aggregate(unit, slots, result, started))
        return sum(results), len(results) - sum(results)

    def _slot(self, unit: Unit, name: str, session: HostSession | None = None) -> _Slot:
        key = self.key(unit, name)
        rel = f"runs/{self.run_id}/{key.slug()}"
        adir = self.store.root / rel
        if adir.exists():            # leftovers of an earlier attempt: redo from scratch
            shutil.rmtree(adir)
        adir.mkdir(parents=True)
        return _Slot(session or self.sessions[name], key, rel)

    def _prepare(self, unit: Unit, s: _Slot) -> None:
        h = s.session
        if h.down:
            s.error = h.down
            return
        size = max(unit.case.image_bytes, self.plan.profile.min_image_bytes)
        label = f"{h.spec.name}-{unit.spec.name}-{unit.spec.variant}-{unit.key.iteration}"
        try:
            info = h.ops.prepare(unit.spec.model_dump(), size, label.replace("/", "_"))
        except HostLost as e:
            h.down = s.error = f"{h.spec.name}: {e}"
            return
        except (StepFailed, FslabError, OSError) as e:
            s.error = f"prepare on {h.spec.name}: {e}"
            return
        s.label = label.replace("/", "_")
        adir = self.store.root / s.rel
        (adir / "filesystem.json").write_bytes(orjson.dumps(info["filesystem"],
                                                            option=orjson.OPT_INDENT_2))
        self._describe(h.spec.name, unit.spec.label, info["filesystem"])
        s.job = adir / "job.fio"
        s.job.write_text(job_text(unit.case.name, unit.case.config, info["mountpoint"]))

    def _measure(self, unit: Unit, ready: list[_Slot]) -> ClientRun:
        first = self.store.root / ready[0].rel
        runtime = float(str(unit.case.config.get("runtime", "60")).rstrip("s") or 60)
        def lost() -> str | None:      # a host known gone: its job will never end
            for s in ready:
                why = s.session.ops.lost()
                if why:
                    return f"{s.session.spec.name} lost: {why}"
            return None

        result = run_clients([(s.session.endpoint, s.job) for s in ready], first / "fio.json",
                             first / "fio.log", timeout=runtime + 900, lost=lost)
        for s in ready:
            _share(first, self.store.root / s.rel, ("fio.json", "fio.log"))
            name = s.session.spec.name
            outcome = result.per_host[name]
            s.measurements, s.error = outcome.measurements, outcome.error
            if s.error and name not in s.error:   # fio's own failure: say whose unit it was
                s.error = f"{name}: {s.error}"
        return result

    def _release(self, unit: Unit, s: _Slot) -> None:
        if not s.label or s.session.down:
            return
        try:
            held = s.session.ops.release(s.label)["entries"]
        except HostLost as e:
            s.session.down = f"{s.session.spec.name}: {e}"
            s.error = s.error or s.session.down
        except Exception as e:     # a filesystem that will not go away taints its numbers
            s.error = s.error or f"teardown on {s.session.spec.name}: {e}"
        else:
            # fio lays its files out in directory=; none there means the server wrote
            # somewhere else (another mount namespace, a reused server on another machine)
            if held == 0 and s.job is not None and s.error is None and not _unlinks(unit):
                s.error = (f"fio left no files on the filesystem prepared on {s.session.spec.name}"
                           ": its fio server does not see that mount, so the numbers would "
                           "measure another filesystem")
                s.measurements = []

    def _finish(self, s: _Slot, started: float) -> bool:
        # a failed unit stores no values: after a lost connection or a failed teardown
        # nobody checked that fio's files landed on the prepared filesystem (a server
        # left running after its host's teardown measures the bare mount point's disk);
        # its raw files stay in the unit's directory
        artifact = f"{s.rel}/fio.json"
        records = [] if s.error else [
            stamp(s.key, self.run_id, dataclasses.replace(m, artifact=artifact))
            for m in s.measurements]
        status = "failed" if s.error else "done"
        if s.error:
            self.console.print(f"[red]failed[/] {s.key.host} {s.key.label()}: {s.error}")
        self.store.finish_unit(self.run_id, s.key, records, status, s.error, started, s.rel)
        return status == "done"

    def _finish_aggregate(self, unit: Unit, slots: list[_Slot], result: ClientRun | None,
                          started: float) -> bool:
        # the sum belongs to no host: a session-less slot only names its unit
        s = self._slot(unit, AGGREGATE_HOST, HostSession(self.hosts.host[0]))
        adir = self.store.root / s.rel
        failed = [x.key.host for x in slots if x.error]
        if failed:
            s.error = f"no aggregate: {', '.join(failed)} failed (the sum needs every host)"
        elif result is None or result.aggregate is None:
            s.error = "fio wrote no \"All clients\" entry"
        else:
            _share(self.store.root / slots[0].rel, adir, ("fio.json", "fio.log"))
            s.measurements = result.aggregate
        return self._finish(s, started)

    def _describe(self, host: str, label: str, fs_info: dict) -> None:
        if (host, label) not in self.described:
            self.described.add((host, label))
            self.store.update_environment(
                self.run_id, {"multihost": {"hosts": {host: {"filesystems": {label: fs_info}}}}})


def _unlinks(unit: Unit) -> bool:
    """The job deletes its files itself (fio's unlink option)."""
    return str(unit.case.config.get("unlink", "0")).lower() not in ("0", "false")


def _share(src_dir: Path, dst_dir: Path, names: tuple[str, ...]) -> None:
    """The one raw output of an invocation, verbatim in every unit that used it
    (a hard link: the same bytes, no copy)."""
    if src_dir == dst_dir:
        return
    for n in names:
        src = src_dir / n
        if src.exists():
            try:
                os.link(src, dst_dir / n)
            except OSError:
                shutil.copy2(src, dst_dir / n)
