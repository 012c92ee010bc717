"""What matters to the user: weighted criteria, built in or from a TOML file.

A criterion is either measured (records chosen by suite / case / metric globs; only
metrics with a better direction count; only measured criteria score) or a feature (a
row of the feature matrix: a stated capability, shown with its weight, never scored).

    # my-priorities.toml
    name = "database host"
    description = "random I/O first, then integrity"
    [[criterion]]
    label = "random write IOPS"
    weight = 3
    suite = "fio"
    case = "randwrite"
    metric = ["write_iops"]
    [[criterion]]
    label = "snapshots"
    weight = 1
    feature = "snapshots"
"""
from __future__ import annotations

import tomllib
from fnmatch import fnmatchcase
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from fslab.errors import FslabError
from fslab.features.catalog import BY_KEY


class Criterion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str
    weight: float = Field(gt=0)
    suite: str = "*"
    case: str = "*"
    metric: list[str] = []
    feature: str | None = None
    why: str = ""          # one clause saying why this matters for the profile

    @model_validator(mode="after")
    def _one_kind(self):
        if bool(self.metric) == bool(self.feature):
            raise ValueError(f"criterion {self.label!r}: give either metric = [...] or feature = ...")
        if self.feature:
            if self.feature not in BY_KEY:
                raise ValueError(f"criterion {self.label!r}: unknown feature {self.feature!r}; "
                                 f"known: {', '.join(BY_KEY)}")
        return self

    @property
    def kind(self) -> str:
        return "feature" if self.feature else "measured"

    def matches(self, suite: str, case: str, metric: str) -> bool:
        return (fnmatchcase(suite, self.suite) and fnmatchcase(case, self.case)
                and any(fnmatchcase(metric, m) for m in self.metric))

    def where(self) -> str:
        """Where the evidence would come from, for 'missing evidence' messages."""
        if self.feature:
            return f"feature {self.feature}"
        return f"suite {self.suite}, case {self.case}, metric {'/'.join(self.metric)}"

    def suite_to_run(self) -> str | None:
        """The suite whose run would answer this criterion (None: the criterion names none)."""
        suite = "features" if self.feature else self.suite
        return None if any(ch in suite for ch in "*?[") else suite

    def how_to_measure(self) -> str:
        """'run `--suite X` to answer it', for a criterion this run did not measure."""
        suite = self.suite_to_run()
        if suite:
            case = "" if any(ch in self.case for ch in "*?[") else f" (case {self.case})"
            return f"run `--suite {suite}`{case} to answer it"
        return f"run a suite that records {'/'.join(self.metric)} to answer it"


class Priorities(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    criterion: list[Criterion] = Field(min_length=1)


def _m(label, weight, metric, suite="*", case="*", why=""):
    return Criterion(label=label, weight=weight, metric=metric, suite=suite, case=case, why=why)


def _f(label, weight, feature, why=""):
    return Criterion(label=label, weight=weight, feature=feature, why=why)


# CPU only per operation and system-wide (fslab.recommend.measures explains why)
_CPU = ["ops_per_cpu_second"]
BUILTIN: dict[str, Priorities] = {p.name: p for p in (
    Priorities(name="resource-constrained",
               description="small machines (S0's onboard computers): CPU cost per operation "
                           "and space overhead weigh most",
               criterion=[
                   _m("CPU cost per operation", 4, _CPU, "fio",
                      why="operations per CPU-second, system-wide (includes daemons like zfs-fuse)"),
                   _m("space overhead", 3, ["space_overhead*", "space_consumed", "capacity_*",
                                            "available_bytes"], "capacity",
                      why="space lost to the filesystem"),
                   _m("throughput", 1, ["*_iops", "*_bw"], "fio", why="work done per second"),
                   _f("compression", 1, "compression", why="stretches a small disk"),
               ]),
    Priorities(name="random-io", description="lots of small random reads and writes",
               criterion=[
                   _m("random IOPS", 4, ["read_iops", "write_iops"], "fio", "rand*"),
                   _m("mixed IOPS", 3, ["read_iops", "write_iops"], "fio", "mixed"),
                   _m("random latency", 3, ["*_clat_mean", "*_clat_p99"], "fio", "rand*"),
                   _m("CPU cost per operation", 1, _CPU, "fio"),
               ]),
    Priorities(name="sequential-throughput", description="large streaming reads and writes",
               criterion=[
                   _m("sequential bandwidth", 4, ["read_bw", "write_bw"], "fio", "seq*"),
                   _m("large files", 3, ["*"], "largefile"),
                   _m("CPU cost per operation", 1, _CPU, "fio"),
               ]),
    Priorities(name="file-server", description="a small-business file server (S3): copy, "
               "remove, list and find on a tree of files, and how much of the disk is usable",
               criterion=[
                   _m("file-server tasks", 4, ["elapsed", "writeback", "elapsed_with_writeback", "*_faults"],
                      "tasks", why="S3's 11 tasks: time until the data is on disk, page faults"),
                   _m("capacity", 3, ["*"], "capacity", why="usable share of the partition"),
                   _m("small files", 2, ["*"], "smallfiles"),
                   _f("snapshots", 1, "snapshots", why="cheap restore points for user data"),
                   _f("online grow", 1, "online_grow", why="add space without downtime"),
               ]),
    Priorities(name="data-integrity", description="never return wrong data; be able to go back",
               criterion=[
                   _m("corruption caught (integrity suite)", 4, ["silent", "healed", "healed_after_scrub",
                                                                  "collateral_damage"], "integrity"),
                   _f("data checksums", 4, "data_checksums",
                      why="flipped bits are detected instead of returned"),
                   _f("snapshots", 2, "snapshots", why="a consistent copy to roll back to"),
                   _f("metadata checksums", 1, "metadata_checksums"),
                   _f("scrub / self-heal", 1, "scrub"),
                   _m("full-disk behaviour", 1, ["*"], "enospc"),
               ]),
    Priorities(name="small-files", description="many small files: metadata speed and space per file",
               criterion=[
                   _m("small-file workload", 4, ["*"], "smallfiles"),
                   # S3's tasks 06-10: copy, recopy, remove, list (ls -R) and find on the tree
                   _m("tree copy / list / find", 2, ["elapsed", "writeback", "elapsed_with_writeback"],
                      "tasks", "[01][06-9]-*"),
                   _f("inline small files", 1, "inline_small_files", why="no data block per tiny file"),
                   _m("random IOPS", 1, ["read_iops", "write_iops"], "fio", "rand*"),
               ]),
)}


def load(spec: str) -> Priorities:
    """A built-in profile by name, or a TOML file of criteria."""
    if spec in BUILTIN:
        return BUILTIN[spec]
    path = Path(spec)
    if not path.exists():
        raise FslabError(f"--priorities {spec!r}: not a built-in profile "
                         f"({', '.join(BUILTIN)}) and no such file")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise FslabError(f"{path}: {e}") from None
    data.setdefault("name", path.stem)
    try:
        return Priorities.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise FslabError(f"{path}: {where}: {first['msg']}") from None
