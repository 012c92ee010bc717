"""A user's own fio job file, run inside each filesystem under test.

    fslab run --job FILE.fio [--job OTHER.fio ...] --fs ext4,xfs
    [[suite]]  kind = "fio"  job_files = ["a.fio"]      # paths relative to the plan

fio itself validates the file (`fio --parse-only`); fslab reads it only as far as it
must to place it: `include` files are inlined and `${VAR}`s expanded, so the stored
"as run" file is self-contained. Paths (`directory=`, `filename=`, `opendir=`,
`filename_format=`) are made relative and fio runs with the mounted filesystem as
its working directory, so every file the job touches lies in the filesystem under
test, and the as-run file is the same for every filesystem and iteration.

Refused, with one line each, never run:
  - a job naming a block device (`filename=/dev/...`): that is --target device's job;
  - an engine that does not address files (rbd, http, nbd, sg, net, exec, ...) or that
    this fio build lacks, for every filesystem;
  - an engine a filesystem lacks the kernel interface for (e4defrag needs ext4's
    EXT4_IOC_MOVE_EXT ioctl: Driver.ioctls), for that filesystem only.

Sizes and runtimes run as written, unless the run's profile was chosen explicitly:
then each job's size/filesize/io_size and runtime are capped by the profile, and the
as-run file says what was capped.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fslab.errors import FslabError
from fslab.plan.profiles import Profile, parse_size
from fslab.system.proc import run
from fslab.workloads.base import Case
from fslab.plan import SuiteSpec

if TYPE_CHECKING:
    from fslab.workloads.base import UnitContext

# engines whose I/O goes to files (or file operations) on a mounted filesystem
FILE_ENGINES = frozenset({
    "sync", "psync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "mmap",
    "splice", "filecreate", "filestat", "filedelete", "dircreate", "dirstat", "dirdelete",
    "falloc", "ftruncate", "e4defrag"})
# engine -> the kernel interface (a Driver.ioctls entry) a filesystem must offer
ENGINE_NEEDS = {"e4defrag": "EXT4_IOC_MOVE_EXT"}
LOG_KEYS = ("write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log")
PATH_KEYS = ("directory", "filename", "opendir", "filename_format", *LOG_KEYS)
SIZE_KEYS = ("size", "filesize", "io_size")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_INLINE_COMMENT = re.compile(r"\s+[;#].*$")
_UNESCAPED_COLON = re.compile(r"(?<!\\):")


@dataclass
class JobSection:
    name: str
    options: list[tuple[str, str | None]] = field(default_factory=list)   # None: a flag

    @property
    def is_global(self) -> bool:
        return self.name == "global"


@dataclass
class JobFile:
    """One validated job file: its text as given and its sections (includes inlined)."""
    path: Path
    given_text: str
    sections: list[JobSection]

    @property
    def name(self) -> str:
        return self.path.stem

    def jobs(self) -> list[tuple[str, dict[str, str | None]]]:
        """(job section, its effective options): every [global] before it, then its own."""
        glob: dict[str, str | None] = {}
        out = []
        for s in self.sections:
            if s.is_global:
                glob.update(_normalised(s.options))
            else:
                out.append((s.name, {**glob, **_normalised(s.options)}))
        return out

    def reports(self) -> list[list[tuple[str, dict[str, str | None]]]]:
        """The jobs as fio reports them: one list per entry of its output. A job with
        group_reporting is merged into the entry before it when both are in one group (a
        group starts at a stonewall or new_group), as fio's stat.c does: the merged entry
        carries the first job's name and the last job's options, so it must be read as
        every member's I/O, not as that name's or those options'."""
        out: list[list[tuple[str, dict[str, str | None]]]] = []
        group, last = 0, None
        for i, (name, opts) in enumerate(self.jobs()):
            if i and (_waits_for_previous(opts) or _flag(opts, "new_group", False)):
                group += 1
            if _flag(opts, "group_reporting", False) and out and last == group:
                out[-1].append((name, opts))
            else:
                out.append([(name, opts)])
            last = group
        return out

    def explicit(self, key: str) -> bool:
        """Whether the file sets `key` anywhere. The run-wide cache policy must leave an
        option the user wrote alone (e.g. `direct=`): a user's job file wins over defaults."""
        return any(key in _normalised(s.options) for s in self.sections)

    # -- what cannot run ------------------------------------------------------------

    def refusal(self) -> str | None:
        """Why this file runs on no filesystem here (one line), else None."""
        engines = available_engines()
        if not self.jobs():
            return f"job file {self.path.name} refused: it defines no job, only global options"
        for job, opts in self.jobs():
            for part in _parts(opts.get("filename")):
                if part.startswith("/dev/"):
                    return (f"job file {self.path.name} refused: job '{job}' names the device "
                            f"filename={part}; fslab runs job files inside each filesystem "
                            f"under test; to measure on that device use --target device "
                            f"--device {part} (fslab makes each filesystem on it)")
            engine = _engine(opts)
            if engine not in FILE_ENGINES:
                return (f"job file {self.path.name} refused: job '{job}' uses ioengine={engine}, "
                        "which does not address files on a filesystem")
            if engines is not None and engine not in engines:
                return (f"job file {self.path.name} refused: job '{job}' uses ioengine={engine}, "
                        f"which this fio ({fio_version()}) does not have")
        return None

    def refusal_for(self, fs_label: str, ioctls: frozenset[str]) -> str | None:
        """Why this file cannot run on this filesystem (one line), else None."""
        for job, opts in self.jobs():
            need = ENGINE_NEEDS.get(_engine(opts))
            if need and need not in ioctls:
                return (f"job file {self.path.name} refused on {fs_label}: job '{job}' uses "
                        f"ioengine={_engine(opts)}, which needs the {need} ioctl; {fs_label} has none")
        return None

    def unsized(self, overrides: dict[str, str] | None = None) -> list[str]:
        """Jobs fio refuses in a fresh filesystem ('you need to specify size='): no size= or
        filesize= (nor fill_device/fill_fs), and no file that a sized job of the file makes
        (fio's butterfly example names /tmp/testfile and leaves size= commented out)."""
        jobs = [(job, {**opts, **(overrides or {})}) for job, opts in self.jobs()]
        made = {f for _, opts in jobs if _sized(opts) for f in _parts(opts.get("filename"))}
        return [job for job, opts in jobs if not _sized(opts)
                and not (_parts(opts.get("filename")) and set(_parts(opts["filename"])) <= made)]

    def io_modes(self, overrides: dict[str, str] | None = None) -> dict[str, str]:
        """Each job's I/O as it runs, 'direct' (direct=1 or buffered=0) or 'buffered': fslab
        adds no direct= to a job file, whatever the run's page-cache policy."""
        out = {}
        for job, opts in self.jobs():
            opts = {**opts, **(overrides or {})}
            direct = _flag(opts, "direct", False) or not _flag(opts, "buffered", True)
            out[job] = "direct" if direct else "buffered"
        return out

    # -- the file as run --------------------------------------------------------------

    def as_run(self, profile: Profile | None = None, overrides: dict[str, str] | None = None,
               default_size: str | None = None) -> str:
        """The file fio runs, from the mounted filesystem as working directory.
        `profile`: cap sizes and runtimes; `overrides`: options set in every job (--fio);
        `default_size`: given to the jobs fio would refuse without one (unsized())."""
        effective = dict(self.jobs())
        unsized = set(self.unsized(overrides)) if default_size else set()
        lines = [f"# fslab: job file {self.path} as run",
                 "# paths are relative to the filesystem under test: re-run by hand with",
                 "#   cd <mounted filesystem> && fio --output-format=json+ job.fio"]
        if profile is not None:
            lines.append(f"# sizes and runtimes capped by profile {profile.name} "
                         f"({profile.description})")
        for s in self.sections:
            lines.append(f"\n[{s.name}]")
            for k, v in s.options:
                if k in PATH_KEYS and v is not None:
                    v = _inside(v)
                lines.append(k if v is None else f"{k}={v}")
            if s.is_global:
                continue
            extra = dict(overrides or {})
            if s.name in unsized:
                lines.append(f"# fslab: {UNSIZED_WHY}: size={default_size}, the profile's file size")
                extra["size"] = default_size
            if profile is not None:
                for k, (v, why) in _caps(effective[s.name], profile).items():
                    if k not in extra:
                        lines.append(f"# fslab: {why}")
                        extra[k] = v
            lines += [f"{k}={v}" if v != "" else k for k, v in extra.items()]
        return "\n".join(lines) + "\n"

    def directories(self) -> set[str]:
        """Directories (relative to the filesystem) the jobs expect to exist."""
        out: set[str] = set()
        for _, opts in self.jobs():
            dirs = [_inside(p) for p in _parts(opts.get("directory"))] or ["."]
            out.update(dirs)
            out.update(_inside(p) for p in _parts(opts.get("opendir")))
            for f in _parts(opts.get("filename")):
                sub = os.path.dirname(_inside(f))
                if sub:
                    out.update(os.path.join(d, sub) for d in dirs)
        out.update(os.path.dirname(p) or "." for p in self.log_prefixes())
        return {os.path.normpath(d) for d in out}

    def log_prefixes(self) -> set[str]:
        """Where fio writes the jobs' logs (relative to the filesystem): the option's value,
        or the job's name for a bare flag."""
        return {_inside(opts[k]) if opts[k] else job
                for job, opts in self.jobs() for k in LOG_KEYS if k in opts}

    def data_bytes(self, profile: Profile | None = None, default_size: str | None = None,
                   overrides: dict[str, str] | None = None) -> int:
        """Every job's data (size or filesize x nrfiles, x numjobs), capped and sized like
        as_run()."""
        total = 0
        unsized = set(self.unsized(overrides)) if default_size else set()
        for job, opts in self.jobs():
            if job in unsized:
                opts = {**opts, "size": default_size}
            if profile is not None:
                opts = {**opts, **{k: v for k, (v, _) in _caps(opts, profile).items()}}
            size = _bytes(opts.get("size"))
            per_file = _bytes(opts.get("filesize"))
            nfiles = _int(opts.get("nrfiles"), 1)
            total += max(size, per_file * nfiles) * _int(opts.get("numjobs"), 1)
        return total


def load(path: str | Path) -> JobFile:
    """Read and validate a job file (FslabError naming the file and fio's complaint)."""
    path = Path(path).absolute()
    try:
        st = path.stat()
    except OSError as e:
        raise FslabError(f"cannot read fio job file {path}: {e.strerror}") from None
    return _load(path, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=64)   # a plan expands its suites once per filesystem: validate once
def _load(path: Path, mtime_ns: int, size: int) -> JobFile:
    try:
        text = path.read_text()
    except OSError as e:
        raise FslabError(f"cannot read fio job file {path}: {e.strerror}") from None
    job = JobFile(path, text, _sections(path, text, depth=0))
    r = run(["fio", "--parse-only", str(path)], check=False, timeout=30, cwd=str(path.parent))
    # fio cannot parse the options of an engine it lacks: that file is refused, not invalid
    if not r.ok and job.refusal() is None:
        raise FslabError(f"fio job file {path} is invalid: {_diagnosis(r.stderr + r.stdout)}")
    for name, opts in job.jobs():
        for key, value in opts.items():
            if why := size_problem(key, value):
                raise FslabError(f"fio job file {path}: job '{name}' {key}={value}: {why}")
    return job


def _diagnosis(said: str) -> str:
    """fio's own words, in order ('Bad option <rwmixreed=70>; Did you mean rwmixread?;
    fio: job oltp dropped'), without the indented lists of valid values that follow some."""
    lines = [ln.strip() for ln in said.splitlines() if ln.strip() and not ln[0].isspace()]
    return "; ".join(lines[:4]) or "fio --parse-only failed"


UNSIZED_WHY = ("no size=, and no file of that name exists in a fresh filesystem "
               "(fio: 'you need to specify size=')")


# fio's size units (any case; 'i' and 'b' optional): anything else after the number is
# ignored, so bs=8q passes fio's own check and runs with 8-byte blocks
SIZE_OPTIONS = ("size", "filesize", "io_size", "io_limit", "bs", "blocksize", "ba",
                "blockalign", "bsrange", "blocksize_range", "offset", "offset_increment",
                "rate", "rate_min", "zonesize", "zonerange", "zoneskip")
_SIZE_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)", re.I)
_SIZE_UNITS = re.compile(r"([kmgtp]i?b?|b)?", re.I)


def size_problem(key: str, value: str | None) -> str | None:
    """Why fio would run `key=value` other than as written: a unit it does not know
    (bs=8q runs as 8 bytes). Per-direction (4k,8k) and ranges (4k-64k) are judged part by
    part; percentages, expressions and variables are fio's to judge."""
    if key not in SIZE_OPTIONS or not value or any(c in value for c in "%($"):
        return None
    for part in re.split(r"[,:-]", value):
        m = _SIZE_PART.fullmatch(part.strip())
        if m and not _SIZE_UNITS.fullmatch(m.group(2)):
            return (f"fio does not know the unit {m.group(2)!r} and ignores it: it would run "
                    f"{m.group(1)} bytes; write it with k, m, g or t (e.g. {m.group(1)}k)")
    return None


# -- the fio suite's cases ------------------------------------------------------------

@dataclass
class JobFileCase:
    """A user's job file as one case: the text fio runs and why it cannot run, if so."""
    job: JobFile
    text: str                # as run (paths inside the filesystem, caps, --fio overrides)
    refusal: str | None      # on every filesystem (a device filename, a missing engine)
    io: dict[str, str] = field(default_factory=dict)   # job -> "direct" | "buffered", as run
    notes: list[str] = field(default_factory=list)     # what fslab gave the file (a size)

    def io_text(self) -> str:
        return io_text(self.io)

    @property
    def user_sets_direct(self) -> bool:
        """The file writes `direct=` itself: a run-wide cache policy that forces direct=1 on
        the built-in jobs must leave this job's choice alone (the user's file wins)."""
        return self.job.explicit("direct")

    def timed_seconds(self) -> float | None:
        """How long fio runs the file as run: each job its runtime + ramp_time + startdelay,
        the jobs of a group side by side, a group after the one before it (a stonewall or
        wait_for_previous starts a group). None where a job has no runtime: its size alone
        bounds it, and only a run can tell how long that takes. (A runtime= without
        time_based is an upper bound: such a job may finish its size sooner.)"""
        run = JobFile(self.job.path, self.text, _sections(self.job.path, self.text, 0))
        total = group = 0.0
        for i, (_, opts) in enumerate(run.jobs()):
            runtime = _seconds(opts.get("runtime"))
            if not runtime:
                return None
            if i and _waits_for_previous(opts):
                total, group = total + group, 0.0
            group = max(group, runtime + (_seconds(opts.get("ramp_time")) or 0.0)
                        + (_seconds(opts.get("startdelay")) or 0.0))
        return total + group

    def prepare(self, directory: Path, ctx: "UnitContext") -> Path:
        """The job's directories made inside the filesystem, the file as given stored
        beside the one run; returns fio's working directory (the filesystem)."""
        for d in sorted(self.job.directories()):
            (Path(directory) / d).mkdir(parents=True, exist_ok=True)
        given, _ = ctx.artifact(f"given-{self.job.path.name}")
        given.write_text(self.job.given_text)
        return Path(directory)

    def keep_logs(self, directory: Path, ctx: "UnitContext") -> None:
        """The job's own logs (write_bw_log=...) written in the filesystem, kept as artifacts."""
        for prefix in sorted(self.job.log_prefixes()):
            for log in sorted(Path(directory).glob(f"{glob.escape(prefix)}_*.log")):
                dest, _ = ctx.artifact(f"logs/{log.relative_to(directory)}")
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(log, dest)


def job_file_cases(o: dict[str, Any], profile: Profile) -> list:
    """The fio suite's cases for `job_files`: one per file, named after it; records carry
    each job's section name."""
    unknown = set(o) - {"job_files", "fio", "scale", "image_size"}
    if unknown:
        raise FslabError(f"[[suite]] kind='fio' with job_files: unknown key(s) {sorted(unknown)}; "
                         "job files take fio, scale and image_size only")
    overrides = {k: _fio_value(v) for k, v in (o.get("fio") or {}).items()}
    files = o["job_files"]
    if not isinstance(files, list) or not files or not all(isinstance(f, str) for f in files):
        raise FslabError("[[suite]] kind='fio': job_files must be a list of job file paths")
    capped = profile if o.get("scale") is True else None
    cases, names = [], set()
    for path in files:
        job = load(path)
        if job.name in names:
            raise FslabError(f"two job files named {job.name!r}: rename one (cases are named "
                             "after their file)")
        names.add(job.name)
        size = unsized_default(profile)
        image = (parse_size(o["image_size"]) if o.get("image_size") else
                 int(job.data_bytes(capped, size, overrides) * 1.3) + (96 << 20))
        unsized = job.unsized(overrides)
        notes = [f"job{'s' if len(unsized) > 1 else ''} {', '.join(unsized)}: {UNSIZED_WHY}; "
                 f"given size={size}, the profile's file size"] if unsized else []
        cases.append(Case(name=job.name, params={"workload": job.name},
                          config=JobFileCase(job, job.as_run(capped, overrides, size), job.refusal(),
                                             job.io_modes(overrides), notes),
                          image_bytes=image))
    return cases


def io_text(io: dict[str, str]) -> str:
    """'oltp buffered, log-append direct' ('both jobs buffered' when they agree)."""
    modes = set(io.values())
    if len(modes) == 1 and len(io) > 1:
        return f"{'both' if len(io) == 2 else f'all {len(io)}'} jobs {modes.pop()}"
    return ", ".join(f"{job} {mode}" for job, mode in io.items())


def unsized_default(profile: Profile) -> str:
    """The size a job without one gets: S2's file (1 GiB) at the profile's scale."""
    return f"{profile.file_size(1 << 30) >> 20}m"


def _sections(path: Path, text: str, depth: int) -> list[JobSection]:
    if depth > 8:
        raise FslabError(f"fio job file {path}: includes nested too deep")
    sections: list[JobSection] = []
    for raw in text.splitlines():
        line = _INLINE_COMMENT.sub("", raw).strip()   # fio drops ' ; ...' and ' # ...' too
        if not line or line[0] in ";#":
            continue
        if line.startswith("[") and line.endswith("]"):
            sections.append(JobSection(line[1:-1].strip()))
            continue
        if line.startswith("include ") or line.startswith("include\t"):
            inc = Path(_expand(line.split(None, 1)[1].strip()))
            inc = inc if inc.is_absolute() else path.parent / inc
            try:
                inner = _sections(inc, inc.read_text(), depth + 1)
            except OSError as e:
                raise FslabError(f"fio job file {path}: include {inc}: {e.strerror}") from None
            if inner and not inner[0].name and sections:   # options continuing this section
                sections[-1].options += inner.pop(0).options
            sections += inner
            continue
        key, sep, value = line.partition("=")
        if not sections:                      # options before any section (an include's body)
            sections.append(JobSection(""))
        sections[-1].options.append((key.strip(), _expand(value.strip()) if sep else None))
    return sections


def _fio_value(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def _expand(value: str) -> str:
    """${VAR} from the environment, as fio does; unknown ones stay for fio to judge."""
    return _ENV.sub(lambda m: os.environ.get(m.group(1), m.group(0)), value)


def _normalised(options: list[tuple[str, str | None]]) -> dict[str, str | None]:
    out = {}
    for k, v in options:
        out["rw" if k == "readwrite" else k] = v
    return out


def _parts(value: str | None) -> list[str]:
    """fio's colon-separated list of names ('\\:' is a literal colon)."""
    if not value:
        return []
    return [p for p in _UNESCAPED_COLON.split(value) if p]


def _inside(value: str) -> str:
    """A path (or list of paths) made relative, so it resolves inside the filesystem."""
    out = []
    for p in _UNESCAPED_COLON.split(value):
        rel = p.lstrip("/")
        out.append(rel if rel or not p else ".")
    return ":".join(out)


def _sized(opts: dict[str, str | None]) -> bool:
    return bool(opts.get("size") or opts.get("filesize")) or any(
        _flag(opts, k, False) for k in ("fill_device", "fill_fs"))


def _flag(opts: dict[str, str | None], key: str, default: bool) -> bool:
    """A fio boolean: a bare flag is set; 0/false/no are off."""
    if key not in opts:
        return default
    v = opts[key]
    return v is None or v.strip().lower() not in ("0", "false", "no", "off")


def _waits_for_previous(opts: dict[str, str | None]) -> bool:
    """A job fio starts only after the jobs before it end (stonewall, wait_for_previous)."""
    return _flag(opts, "stonewall", False) or _flag(opts, "wait_for_previous", False)


def _engine(opts: dict[str, str | None]) -> str:
    return (opts.get("ioengine") or "psync").split(":")[0].strip()


def _caps(opts: dict[str, str | None], profile: Profile) -> dict[str, tuple[str, str]]:
    """Options to set so this job stays within the profile: {key: (value, why)}."""
    caps: dict[str, tuple[str, str]] = {}
    if profile.runtime_s is not None:
        own = _seconds(opts.get("runtime"))
        if own is None or own > profile.runtime_s:
            was = f"was {opts['runtime']}" if opts.get("runtime") else "had no runtime limit"
            caps["runtime"] = (f"{int(profile.runtime_s)}",
                               f"runtime capped to {int(profile.runtime_s)}s ({was})")
    if profile.max_file_bytes is not None:
        for k in SIZE_KEYS:
            v = opts.get(k)
            if v and _bytes(v) > profile.max_file_bytes:
                cap = f"{profile.max_file_bytes >> 10}k"
                caps[k] = (cap, f"{k} capped to {cap} (was {v})")
    return caps


def _bytes(value: str | None) -> int:
    """A plain fio size in bytes; 0 for what is not one (percentages, ranges, unset)."""
    if not value or "%" in value or "-" in value or ":" in value:
        return 0
    try:
        return parse_size(value)
    except ValueError:
        return 0


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value else default
    except ValueError:
        return default


def _seconds(value: str | None) -> float | None:
    if not value:
        return None
    m = re.fullmatch(r"\s*([0-9.]+)\s*(us|ms|s|m|h|d)?\s*", value.lower())
    if not m:
        return None
    mult = {"us": 1e-6, "ms": 1e-3, "s": 1, None: 1, "m": 60, "h": 3600, "d": 86400}
    return float(m.group(1)) * mult[m.group(2)]


@lru_cache(maxsize=1)
def available_engines() -> frozenset[str] | None:
    """The engines this fio has (`fio --enghelp`); None when fio cannot say."""
    r = run(["fio", "--enghelp"], check=False, timeout=30)
    names = [ln.strip() for ln in r.stdout.splitlines()[1:] if ln.startswith("\t")]
    return frozenset(names) or None


@lru_cache(maxsize=1)
def fio_version() -> str:
    r = run(["fio", "--version"], check=False, timeout=30)
    return r.stdout.strip() or "fio"


def add_job_files(plan, files, image_size: str | None, profile_explicit: bool,
                  fio_options: dict[str, str] | None = None):
    """Lay `--job FILE`s (with --fio options) and `--image-size` onto a plan, settle whether each job-file suite
    is capped by the profile (only when the profile was chosen explicitly, unless the plan
    says `scale`), and validate every job file with fio before the run exists.
    (The new plan, True when it has job-file suites: its stored text must then be rewritten.)"""
    suites = list(plan.suite)
    if files:
        extra = {"fio": dict(fio_options)} if fio_options else {}
        suites.append(SuiteSpec(kind="fio", job_files=[str(Path(f).absolute()) for f in files],
                                **extra))
    found = False
    for i, s in enumerate(suites):
        if "job_files" not in (s.model_extra or {}):
            continue
        found = True
        extra = dict(s.model_extra)
        extra.setdefault("scale", profile_explicit)
        if image_size:
            extra["image_size"] = image_size
        if extra.get("image_size") and not _bytes(str(extra["image_size"])):
            raise FslabError(f"image size {extra['image_size']!r}: expected a size like 2G")
        suites[i] = s = SuiteSpec.model_validate({"kind": s.kind, "workloads": s.workloads,
                                                  **extra})
        job_file_cases(s.options, plan.profile)   # reads and validates every file
    return plan.model_copy(update={"suite": suites}), found


def job_file_suites(plan) -> list:
    return [s for s in plan.suite if "job_files" in (s.model_extra or {})]


def environment_of(schedule) -> dict[str, dict[str, Any]]:
    """What the run's environment says of each job file of the plan's schedule
    (fslab/run/schedule.py): where it came from, whether its sizes and runtimes ran as
    written or capped by the profile, each job's I/O as run (direct or buffered: the
    file's own choice) and what fslab gave it (notes)."""
    out = {}
    for s, _, cases in schedule.suite_cases:
        if "job_files" not in (s.model_extra or {}):
            continue
        how = (f"capped by profile {schedule.plan.profile.name}"
               if s.model_extra.get("scale") is True else "as written")
        for case in cases:
            jf = case.config
            out[case.name] = {"path": str(jf.job.path), "sizes_and_runtimes": how,
                              "io": jf.io, "notes": jf.notes}
    return out
