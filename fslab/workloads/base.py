"""Workload (suite) contract.

A suite expands its [[suite]] table into cases (`cases`), and measures one case
on one filesystem instance per call (`run`). It returns Measurements; the
scheduler turns them into Records, stores them, and handles failures, order,
resume and teardown. A suite never talks to the store.

Adding a workload = one new module in fslab/workloads/ with a Suite subclass
decorated with @register.
"""
from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from fslab import metrics
from fslab.errors import StepFailed, FslabError
from fslab.filesystems.base import Driver, Instance
from fslab.plan import FilesystemSpec, SuiteSpec
from fslab.plan.profiles import Profile, parse_size
from fslab.metrics import Catalogue
from fslab.records import Measurement, UnitKey


@dataclass
class Case:
    name: str                         # e.g. "randread", "bs=64k", "tasks"
    params: dict[str, Any] = field(default_factory=dict)   # recorded with every value
    config: Any = None                # suite-private details (job options, ...)
    image_bytes: int = 0              # loop image size this case needs (0: profile minimum)


@dataclass(frozen=True)
class CacheUse:
    """How a suite used the page cache: `buffered` when its numbers may come from memory
    (the report then names it beside the run's policy), and one sentence saying how."""
    sentence: str
    buffered: bool


class UnitFailed(StepFailed):
    """A unit failed in a way worth recording (e.g. fio exited with an error code).

    `measurements` are still stored (e.g. the error code itself), and the unit is
    marked failed with `message`.
    """
    def __init__(self, message: str, measurements: list[Measurement] | None = None):
        super().__init__(message)
        self.measurements = measurements or []


@dataclass
class UnitContext:
    """Everything one unit of work may use."""
    key: UnitKey
    run_id: str
    spec: FilesystemSpec
    driver: Driver
    profile: Profile
    plan_seed: int
    artifact_dir: Path               # absolute: <results>/runs/<run>/<unit slug>/
    artifact_rel: str                # the same, relative to <results>/ (stored in records)
    workdir: Path                    # where images and mountpoints go
    make_target: Callable[[], Any]   # a fresh Target for this unit
    mountpoint_dir: Path | None = None   # --mountpoint: test inside this existing directory
    log: Callable[[str], None] = print
    environment: dict[str, Any] = field(default_factory=dict)   # filled by run() for the store
    page_cache: str = "off"          # the run's cache policy (fslab/fio/cachepolicy.py)
    unit_timeout: float | None = None   # [run] unit_timeout: overrides the derived deadline
    # wall time of the unit's parts (settle, acquire, mkfs, mount, layout, teardown, ...):
    # kept as the unit's phases.json, where bench/noise reads what a unit costs beyond its I/O
    phases: dict[str, float] = field(default_factory=dict)

    def filesystem(self, size_bytes: int = 0, label: str | None = None,
                   spec: FilesystemSpec | None = None) -> Instance:
        """A not-yet-made filesystem instance of this unit's fs (`with` it, or step it)."""
        spec = spec or self.spec
        label = label or f"{spec.name}-{spec.variant}-{self.key.iteration}".replace("/", "_")
        if spec.image_size:   # the plan's [[filesystem]] image_size / --image-size wins
            size_bytes = parse_size(spec.image_size)
        else:
            size_bytes = max(size_bytes, self.profile.min_image_bytes)
        return Instance(self.driver, spec, self.make_target(), self.workdir, label, size_bytes)

    def note_workload(self, **what: Any) -> None:
        """Say what this unit's workload was, for the run's environment ("workloads",
        keyed suite:case) and the report: its input, copy mode, page-cache policy."""
        self.environment.setdefault("workload", {}).update(what)

    def note_cache_policy(self, suite: "Suite") -> None:
        """Record what the suite's measurements are under the run's page-cache policy."""
        said = suite.cache_policy(self.page_cache)
        if said is not None:
            self.note_workload(page_cache=said.sentence, buffered=said.buffered)

    def artifact(self, name: str) -> tuple[Path, str]:
        """(absolute path, stored relative path) of a raw file of this unit."""
        self.artifact_dir.mkdir(parents=True, exist_ok=True)
        return self.artifact_dir / name, f"{self.artifact_rel}/{name}"

    def seed(self, *parts: Any) -> int:
        """A deterministic seed for this unit (same plan seed -> same data)."""
        import zlib
        return zlib.crc32(repr((self.plan_seed, self.key.fs, self.key.case, self.key.iteration,
                                parts)).encode())


class Suite(ABC):
    name: str = "?"
    description: str = ""
    needs_root: bool = True
    #: set when the suite writes or inspects files: it then skips a driver without any
    #: (the bare device), saying this
    needs_files: str | None = None
    #: the metrics it records, as the catalogue declares them under its name
    #: (fslab/metrics/declared.py): unit, direction, label, role, trials
    metrics: Catalogue = Catalogue(())
    #: the study whose protocol it runs ("S1", ...), which a profile other than paper
    #: scales down; "" for a suite of fslab's own or a program's (pgbench, a replay)
    study: str = ""

    def scales_a_study(self, spec: SuiteSpec) -> bool:
        """Whether a profile other than paper runs `spec` smaller than its study did."""
        return bool(self.study)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.metrics = metrics.declared(cls.name) or Catalogue(())

    @abstractmethod
    def cases(self, spec: SuiteSpec, profile: Profile) -> list[Case]:
        """Expand the plan's [[suite]] table into cases (validate options here: FslabError)."""

    @abstractmethod
    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        """Measure one case on one filesystem; raise UnitFailed/StepFailed on failure."""

    def options(self, spec: SuiteSpec, known: set[str] | frozenset[str],
                workloads: tuple[str, ...] = ()) -> tuple[dict[str, Any], list[str]]:
        """The [[suite]] table's options and chosen workloads, after rejecting unknown keys
        and, when `workloads` lists the valid ones, unknown workload names (default: all)."""
        o = spec.options
        unknown = set(o) - set(known)
        if unknown:
            raise FslabError(f"[[suite]] kind='{self.name}': unknown key(s) {sorted(unknown)}; "
                             f"known: {sorted(known)}")
        names = list(spec.workloads or workloads)
        bad = [n for n in names if workloads and n not in workloads]
        if bad:
            raise FslabError(f"{self.name} workload {bad[0]!r}: choose one of "
                             f"{', '.join(map(repr, workloads))}")
        return o, names

    def cache_policy(self, page_cache: str) -> "CacheUse | None":
        """What this suite's numbers are under the run's page-cache policy ("off" | "on"),
        for the environment and the report; None for a suite that moves no file data
        (capacity) or applies the policy per filesystem itself (fio, which says so there)."""
        return None

    def supports(self, driver: Driver) -> str | None:
        """None if this suite can run on this driver's filesystem, else why not (its units
        are skipped)."""
        return self.needs_files if self.needs_files and not driver.holds_files else None

    def refuses(self, case: Case, driver: Driver, fs_label: str) -> str | None:
        """None if this case can run on this filesystem, else one line saying why not
        (the case is left out there; the rest of the run goes on)."""
        return None

    def describe(self, case: Case) -> dict[str, Any]:
        """What this case will run, for `fslab run --dry-run`: its exact options or task
        parameters (suites with richer configs say more)."""
        cfg = case.config
        if isinstance(cfg, dict) and all(isinstance(v, (str, int, float, bool, type(None)))
                                         for v in cfg.values()):
            return {"parameters": dict(cfg)}
        return {"parameters": dict(case.params)}

    def image_bytes(self, case: Case, spec: FilesystemSpec, profile: Profile) -> int | None:
        """The image size a unit of this case will use (what `ctx.filesystem` makes), for
        `--dry-run`; None when only the unit can tell (sized from its input)."""
        if spec.image_size:
            return parse_size(spec.image_size)
        return max(case.image_bytes, profile.min_image_bytes)

    def estimate_seconds(self, case: Case, slice_ms: int | None = None) -> float | None:
        """A rough duration of one unit of this case, or None when only a past run can
        tell (`--dry-run` then uses the store's earlier units); with `slice_ms`, its share
        of a block of interleaved slices (where `slicing` allows one)."""
        return None

    def slicing(self, case: Case) -> str | None:
        """None when a round's units of this case can run as one block of interleaved
        slices (`measure_block`), else why they run as whole units."""
        return f"the {self.name} suite runs whole units"

    def measure_block(self, ctxs: list[UnitContext], case: Case, slice_ms: int,
                      block_dir: Path, seed: str) -> list[list[Measurement] | UnitFailed]:
        """Measure one case on several filesystems at once as interleaved slices (only where
        `slicing` said None): per context, its measurements or UnitFailed."""
        raise NotImplementedError(f"{self.name} has no block design")

    def mounted(self, ctx: UnitContext, case: Case) -> "MountedFs":
        """The usual setup: a fresh filesystem for this case, or the user's --mountpoint."""
        return MountedFs(ctx, case.image_bytes)


class MountedFs:
    """`with suite.mounted(ctx, case) as (path, inst):` -> a directory to work in.

    With --mountpoint, `inst` is None and the path is a fresh subdirectory of the
    user's directory (removed afterwards). Otherwise a new filesystem is made,
    mounted, described into ctx.environment, and torn down afterwards.
    """
    def __init__(self, ctx: UnitContext, size_bytes: int):
        self.ctx, self.size, self.inst, self.path = ctx, size_bytes, None, None

    def __enter__(self) -> tuple[Path, Instance | None]:
        if self.ctx.mountpoint_dir is not None:
            import tempfile
            self.path = Path(tempfile.mkdtemp(prefix="fslab-", dir=self.ctx.mountpoint_dir))
            return self.path, None
        self.inst = self.ctx.filesystem(self.size)
        try:
            self.inst.__enter__()
        finally:
            self.ctx.phases.update(self.inst.seconds)
        self.ctx.environment["filesystem"] = self.inst.effective()
        self.path = self.inst.mountpoint
        return self.path, self.inst

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.inst is not None:
            try:
                self.inst.close()
                self.ctx.phases.update(self.inst.seconds)
            except StepFailed as e:
                if not isinstance(exc, StepFailed):
                    raise
                exc.args = (f"{exc}; {e}",)   # the unit's own failure (e.g. hung) comes first
        elif self.path is not None:
            import shutil
            shutil.rmtree(self.path, ignore_errors=True)


_suites: dict[str, type[Suite]] = {}


def register(cls: type[Suite]) -> type[Suite]:
    _suites[cls.name] = cls
    return cls


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out
