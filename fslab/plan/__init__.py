"""Plans: what to compare (filesystems + options) and how (suites, profile, iterations).

A plan is TOML validated by pydantic. Errors name the file, the line and the field.
CLI flags build the same Plan object (fslab/run/flags.py), so a plan file and flags are interchangeable.
A plan is frozen: built once (fslab/run/flags.py), then read; a change (the filesystem
mounted at --mountpoint, a race's candidates) is a new plan (`model_copy(update=...)`).
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fslab.errors import FslabError
from fslab.plan.profiles import PROFILES, Profile
from fslab.records import DEFAULT_VARIANT, level_label
from fslab.plan.throttle import parse as parse_throttle, percent

# the page-cache policies a plan may ask for (what each does: fslab/fio/cachepolicy.py)
PAGE_CACHE_POLICIES = ("off", "on")


def default_page_cache(profile_name: str) -> str:
    """The policy of a plan that names none: buffered for the studies' own parameters."""
    return "on" if profile_name == "paper" else "off"


class RunSection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    profile: str = "quick"
    iterations: int | None = Field(None, ge=1, le=1000)   # None: the profile's default
    # a reference study's own repetitions: used at --profile paper (where `iterations` is unset);
    # smaller profiles keep their defaults, which give the statistics enough rounds
    study_iterations: int | None = Field(None, ge=1, le=1000)
    seed: int = 42
    # adaptive: after the `iterations` rounds, more rounds of every case whose headline
    # metrics still have a 95% CI of the mean wider than ±target_ci (relative), up to
    # max_iterations rounds in all (pyperf/hyperfine-style: stop when the answer is clear)
    adaptive: bool = False
    max_iterations: int = Field(30, ge=2, le=1000)
    target_ci: float = Field(0.03, gt=0, lt=1)
    # how a unit's loop image is held, "fresh" (a new sparse file per unit) or "reused" (one
    # file written once per run, every unit's filesystem on the same host blocks), and
    # whether each unit starts on a settled machine (writeback drained, caches dropped);
    # None: the profile's default. bench/noise measured both (docs/statistics.md)
    image: Literal["fresh", "reused"] | None = None
    settle: bool | None = None
    loop_direct_io: bool = True    # the loop device reads and writes its image with O_DIRECT
    # a round's order: "spread" (every unit of the round shuffled) or "grouped" (each case's
    # filesystems back to back, cases and filesystems shuffled); None: the profile's default
    order: Literal["spread", "grouped"] | None = None
    # how a round measures a case: "sliced" (its candidates as one block of one fio process,
    # taking turns in slices of slice_ms, fslab/workloads/sliced.py, where the case allows)
    # or "units" (one unit per candidate); None: the profile's default
    design: Literal["sliced", "units"] | None = None
    slice_ms: int = Field(250, ge=20, le=10_000)
    # "off": measure the device (direct I/O where accepted); "on": buffered, as the studies
    # ran. None: the profile's default (on for paper, off otherwise); see fslab/fio/cachepolicy.py
    page_cache: Literal["off", "on"] | None = None
    # seconds a unit's measured process may take before it counts as hung; None: derived
    # from what it asked for (4 x runtime+ramp + its bytes at 10 MiB/s, at least 120 s)
    unit_timeout: float | None = Field(None, gt=0)
    name: str | None = None        # a label for the run
    description: str | None = None

    @field_validator("profile")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in PROFILES:
            raise ValueError(f"unknown profile {v!r}; choose one of {', '.join(PROFILES)}")
        return v


class FilesystemSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    variant: str = DEFAULT_VARIANT
    mkfs_options: list[str] = []
    mount_options: list[str] = []
    properties: dict[str, str] = {}        # ZFS dataset properties (zfs create -O)
    pool_properties: dict[str, str] = {}   # ZFS pool properties (zpool create -o)
    image_size: str | None = None          # override the loop image size, e.g. "2G"
    devices: int = Field(1, ge=1, le=4)    # loop devices (btrfs raid1 / zfs mirror)
    # ext4 lazy init handling: "mkfs" (-E lazy_itable_init=0,...) or "wait"
    ext4_lazy_init: str = "mkfs"
    # a benchmark aid of fslab decide, never a configuration: its fio jobs idle this
    # fraction of the time ("5%" or 0.05), a planted slowdown (fslab/fio/throttle.py)
    throttle: float | None = None

    @field_validator("throttle", mode="before")
    @classmethod
    def _fraction(cls, v: Any) -> float | None:
        return None if v is None else parse_throttle(v)

    @property
    def label(self) -> str:
        return level_label(self.name, self.variant)

    @property
    def options_text(self) -> str:
        bits = []
        if self.mkfs_options: bits.append("mkfs " + " ".join(self.mkfs_options))
        if self.mount_options: bits.append("-o " + ",".join(self.mount_options))
        if self.properties: bits.append(" ".join(f"{k}={v}" for k, v in self.properties.items()))
        if self.throttle:
            bits.append(f"throttled {percent(self.throttle)} (a planted slowdown)")
        return "; ".join(bits) or "defaults"


class SuiteSpec(BaseModel):
    """[[suite]]: kind picks the workload; every other key is that suite's own options."""
    model_config = ConfigDict(extra="allow", frozen=True)
    kind: str
    workloads: list[str] | None = None   # which cases of the suite (None: its defaults)

    @property
    def options(self) -> dict[str, Any]:
        return {k: v for k, v in (self.model_extra or {}).items() if k != "profiles"}

    def at_profile(self, profile: str) -> "SuiteSpec":
        """This table with [suite.profiles.NAME] laid over it, key by key.

        A study's grid can be too big for a smoke run even with sizes and
        runtimes scaled: the plan names a smaller sweep for that profile.
        """
        overlays = (self.model_extra or {}).get("profiles") or {}
        unknown = set(overlays) - set(PROFILES)
        if unknown:
            raise FslabError(f"[suite.profiles] of suite {self.kind!r}: unknown profile(s) "
                             f"{sorted(unknown)}; choose from {', '.join(PROFILES)}")
        if profile not in overlays:
            return self
        return SuiteSpec.model_validate({"kind": self.kind, "workloads": self.workloads,
                                         **self.options, **overlays[profile]})


class DecideSection(BaseModel):
    """[decide]: this run is a race of its [[filesystem]] candidates (fslab decide,
    fslab/decide/): the rounds after run.iterations go to the survivors only."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    metric: str | None = None            # None: each workload's answer metric
    delta: float = Field(0.03, gt=0, lt=1)   # indifference zone: closer than this is a tie
    max_rounds: int = Field(10, ge=3, le=1000)
    budget_seconds: float | None = Field(None, gt=0)
    allow: list[Literal["safe", "trade"]] = ["safe"]
    # label -> what the candidate varies and what it gives up (safety, trades, changed, effect)
    candidates: dict[str, dict[str, str]] = {}
    left_out: list[str] = []             # candidates not raced, one line each
    # race on when the first look says the noise puts delta out of reach (--keep-going)
    keep_going: bool = False


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    run: RunSection = RunSection()
    decide: DecideSection | None = None
    filesystem: list[FilesystemSpec] = []
    suite: list[SuiteSpec] = []
    hosts: dict[str, Any] | None = None   # multi-host section (see docs)
    target: dict[str, Any] = {}           # e.g. {kind="guest"} or {kind="device", path=...}
    # the verbatim text this plan came from (stored with the run)
    source_text: str = Field("", exclude=True)
    source_path: str | None = Field(None, exclude=True)

    @property
    def profile(self) -> Profile:
        return PROFILES[self.run.profile]

    @property
    def image(self) -> str:
        return self.run.image or self.profile.image

    @property
    def order(self) -> str:
        return self.run.order or self.profile.order

    @property
    def design(self) -> str:
        """"sliced" or "units": how a round measures a case that allows slices."""
        return self.run.design or self.profile.design

    @property
    def settle(self) -> bool:
        return self.profile.settle if self.run.settle is None else self.run.settle

    @property
    def page_cache(self) -> str:
        return self.run.page_cache or default_page_cache(self.profile.name)

    @property
    def iterations(self) -> int:
        study = self.run.study_iterations if not self.profile.scaled else None
        return self.run.iterations or study or self.profile.iterations

    @property
    def race(self) -> DecideSection:
        """The [decide] table of a decide's plan (a plan without one races nothing)."""
        if self.decide is None:
            raise ValueError("not a decide's plan: it has no [decide] table")
        return self.decide

    def check_unique_variants(self) -> None:
        seen = set()
        for fs in self.filesystem:
            if (fs.name, fs.variant) in seen:
                raise FslabError(f"filesystem {fs.name} variant {fs.variant!r} appears twice; "
                                 "give each a distinct variant name")
            seen.add((fs.name, fs.variant))


def read_text(path: str | Path, what: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as e:
        raise FslabError(f"cannot read {what} {path}: {e.strerror}") from None


def toml_data(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise FslabError(f"{source}: invalid TOML: {e}") from None


def validation_error(e: ValidationError, text: str, source: str, field_loc: tuple = (),
                     line_loc: tuple | None = None) -> FslabError:
    """'file:line: field.path: message' for the first error. `field_loc` prefixes the
    field path (a table the keys sit in); `line_loc` is where to look for the line."""
    err = e.errors()[0]
    loc = err["loc"]
    line = _line_of(text, line_loc if line_loc is not None else (*field_loc, *loc)) if text else None
    where = f"{source}:{line}" if line else source
    field = ".".join(str(x) for x in (*field_loc, *loc)) or "(top level)"
    return FslabError(f"{where}: {field}: {err['msg'].removeprefix('Value error, ')}")


def load(path: str | Path) -> Plan:
    plan = parse(read_text(path, "plan"), str(path))
    base = Path(path).absolute().parent

    def absolute(s: SuiteSpec) -> SuiteSpec:   # job files and replay files: relative to the plan
        extra = dict(s.model_extra or {})
        files = extra.get("job_files")
        if isinstance(files, list):
            extra["job_files"] = [str(base / f) for f in files]
        if s.kind == "replay" and isinstance(extra.get("file"), str):
            extra["file"] = str(base / extra["file"])
        if extra == (s.model_extra or {}):
            return s
        return SuiteSpec.model_validate({"kind": s.kind, "workloads": s.workloads, **extra})
    return plan.model_copy(update={"suite": [absolute(s) for s in plan.suite]})


def parse(text: str, source: str = "<plan>") -> Plan:
    data = toml_data(text, source)
    try:
        plan = Plan.model_validate(data)
    except ValidationError as e:
        raise validation_error(e, text, source) from None
    plan = plan.model_copy(update={"source_text": text, "source_path": source})
    plan.check_unique_variants()
    return plan


def _line_of(text: str, loc: tuple) -> int | None:
    """Best-effort line number for a pydantic error location like ('filesystem', 1, 'name')."""
    lines = text.splitlines()
    start = 0
    keys = [k for k in loc if isinstance(k, str)]
    if loc and isinstance(loc[0], str) and len(loc) > 1 and isinstance(loc[1], int):
        # the (loc[1]+1)-th [[table]] header
        hdr = re.compile(rf"^\s*\[\[\s*{re.escape(loc[0])}\s*\]\]")
        seen = -1
        for i, ln in enumerate(lines):
            if hdr.match(ln):
                seen += 1
                if seen == loc[1]:
                    start = i
                    break
        keys = [k for k in loc[2:] if isinstance(k, str)]
    elif loc and isinstance(loc[0], str):
        hdr = re.compile(rf"^\s*\[\s*{re.escape(loc[0])}\s*\]")
        for i, ln in enumerate(lines):
            if hdr.match(ln):
                start = i
                break
        keys = [k for k in loc[1:] if isinstance(k, str)]
    if not keys:
        return start + 1 if start else None
    key = re.compile(rf"^\s*{re.escape(keys[0])}\s*=")
    for i in range(start, len(lines)):
        if key.match(lines[i]):
            return i + 1
    return start + 1 if start else None


def from_cli(fs: list[str | FilesystemSpec], suites: list[str], profile: str,
             iterations: int | None, seed: int, mkfs_options: list[str] | None = None,
             mount_options: list[str] | None = None,
             fio_options: dict[str, str] | None = None, adaptive: bool = False,
             with_text: bool = True) -> Plan:
    """The plan that `fslab run --fs ... --suite ...` means. `fs` items are specs (a variant's
    own options, fslab/plan/variants.py) or 'zfs:variant'; mkfs_options and mount_options
    (--mkfs-options, --mount-options) are added to every one. `with_text=False`: its stored
    text is the caller's to write (once, when it has laid on what else it adds)."""
    fss = []
    for item in fs:
        if isinstance(item, str):
            name, _, variant = item.partition(":")
            item = FilesystemSpec(name=name, variant=variant or DEFAULT_VARIANT)
        fss.append(item.model_copy(update={
            "mkfs_options": [*item.mkfs_options, *(mkfs_options or [])],
            "mount_options": [*item.mount_options, *(mount_options or [])]}))
    suite_specs = []
    for s in suites:
        extra = ({"fio": dict(fio_options), "unscaled": sorted(fio_options)}
                 if (fio_options and s == "fio") else {})
        suite_specs.append(SuiteSpec(kind=s, **extra))
    plan = Plan(run=RunSection(profile=profile, iterations=iterations, seed=seed, adaptive=adaptive),
                filesystem=fss, suite=suite_specs, source_path="<command line>")
    plan.check_unique_variants()
    return plan.model_copy(update={"source_text": to_toml(plan)}) if with_text else plan


def to_toml(plan: Plan) -> str:
    """A plan file equivalent to `plan` (so a CLI run can be re-run from its stored plan):
    every section, [hosts] and [target] included."""
    import tomli_w
    data: dict[str, Any] = {"run": plan.run.model_dump(exclude_none=True)}
    data["filesystem"] = [{"name": f.name, **f.model_dump(exclude_defaults=True)}
                          for f in plan.filesystem]
    data["suite"] = [{"kind": s.kind, **({"workloads": s.workloads} if s.workloads is not None
                                         else {}), **(s.model_extra or {})} for s in plan.suite]
    if plan.hosts:
        data["hosts"] = plan.hosts
    if plan.target:
        data["target"] = plan.target
    if plan.decide:
        data["decide"] = plan.decide.model_dump(exclude_none=True)
    return tomli_w.dumps({k: v for k, v in data.items() if v != []})

