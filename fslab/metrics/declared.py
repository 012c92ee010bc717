"""The metrics each suite records, declared once (the catalogue: fslab/metrics/__init__.py).

A block shared by several suites (what fio reports per job, the device and CPU accounting
around a fio unit, a timed step's usage, the space a write cost) is declared once and
listed by every suite that records it. tests/test_layout.py fails on a metric a suite
records, or an output uses, that its suite does not declare here.
"""
from __future__ import annotations

import re

from fslab.metrics.model import Metric
from fslab.metrics.apps import APP_SUITES

# --- fio: per job (fslab/fio/parse.py) ----------------------------------------------------

DIRECTIONS = ("read", "write", "trim")
# rw= values and the directions they do (fio's `readwrite` is an alias of `rw`): which
# direction metrics a job records, and which of them answer it
RW_DIRECTIONS: dict[str, set[str]] = {
    "read": {"read"}, "randread": {"read"},
    "write": {"write"}, "randwrite": {"write"},
    "trim": {"trim"}, "randtrim": {"trim"},
    "rw": {"read", "write"}, "readwrite": {"read", "write"}, "randrw": {"read", "write"},
    "trimwrite": {"trim", "write"}, "randtrimwrite": {"trim", "write"},
}


def directions_of(rw: str) -> set[str]:
    """The directions an rw= pattern does ('randrw' -> read and write)."""
    return set(RW_DIRECTIONS.get(rw, ()))


_STAT = r"(mean|p\d+(?:\.\d+)?|min|max|stddev)"
_TAIL = r"(min|max|p\d+(?:\.\d+)?)"


def _latency_label(m: re.Match) -> str:
    # fio's clat is the latency the answer ranks ("p99 read latency"); its lat is slat +
    # clat, said apart (both read "mean read latency", two rows of one name per workload)
    kind = {"slat": "submission latency", "lat": "total latency (submission + completion)"
            }.get(m[2], "latency")
    return f"{m[3]} {m[1]} {kind}"


def _rates() -> list[Metric]:
    # read and write rates answer a workload by its pattern; trim's are measured, ranked,
    # and left out of the answer's and the run summary's rates (as before the catalogue)
    out = []
    for stat, unit, said in (("iops", "ops/s", "IOPS"), ("bw", "B/s", "bandwidth")):
        for d in DIRECTIONS:
            out.append(Metric(f"{d}_{stat}", unit, "higher",
                              "throughput" if d != "trim" else "measure",
                              f"{d} {said}", quantity="throughput"))
    return sorted(out, key=lambda m: (m.key.startswith("trim"), m.unit != "ops/s"))


FIO_JOB: tuple[Metric, ...] = (
    *_rates(),
    # a job too short to time (fio/parse.py SHORT_RUN_MS) records its rates unranked, with this
    Metric(r"(read|write|trim)_runtime", "s"),
    # the mean completion latency answers a job whose rates could not be ranked
    Metric("write_clat_mean", "ns", "lower", label="mean write latency",
           quantity="write latency mean", answer_rank=40),
    Metric("read_clat_mean", "ns", "lower", label="mean read latency",
           quantity="read latency mean", answer_rank=41),
    Metric(rf"(read|write|trim)_(clat|lat)_{_TAIL}", "ns", "lower", "detail", _latency_label,
           quantity=r"\1 latency \3"),
    Metric(rf"(read|write|trim)_(clat|lat)_{_STAT}", "ns", "lower", label=_latency_label,
           quantity=r"\1 latency \3"),
    Metric(rf"(read|write|trim)_(slat)_{_TAIL}", "ns", "lower", "detail", _latency_label),
    Metric(rf"(read|write|trim)_(slat)_{_STAT}", "ns", "lower", label=_latency_label),
    # fsync/fdatasync
    Metric(rf"(sync)_(lat)_{_TAIL}", "ns", "lower", "detail",
           lambda m: f"{m[3]} sync latency (fsync/fdatasync)", quantity=r"\1 latency \3"),
    Metric(rf"(sync)_(lat)_{_STAT}", "ns", "lower",
           label=lambda m: f"{m[3]} sync latency (fsync/fdatasync)", quantity=r"\1 latency \3"),
    Metric(rf"(sync)_(clat)_{_TAIL}", "ns", "lower", "detail", quantity=r"\1 latency \3"),
    Metric(rf"(sync)_(clat)_{_STAT}", "ns", "lower", quantity=r"\1 latency \3"),
    # fio's own threads' CPU % of a fixed-time job: described (more work in the same time
    # costs more; a FUSE daemon's work is missing from it)
    Metric("usr_cpu", "%", label="fio's user CPU %"),
    Metric("sys_cpu", "%", label="fio's system CPU %"),
    Metric("error", "code"),
    Metric("clones", "count"),
    # fio's steadystate window (the standard profile asks for it): described, never ranked
    Metric("steady_state_reached", "count",
           label="steady state reached (SNIA: within 20% of the mean, fit within 10%)"),
    Metric("steady_state_spread", "%", label="steady-state window: largest deviation % of mean"),
    Metric("steady_state_slope", "%", label="steady-state window: fitted excursion % of mean"),
    # merged clones' per-clone mean (fio/clones.py): their sum is the job's rate
    Metric(r"(read|write|trim)_iops_per_job", "ops/s", role="detail"),
    Metric(r"(read|write|trim)_bw_per_job", "B/s", role="detail"),
)

CPU_BUSY = Metric("cpu_busy_system_wide", "%", label="system-wide CPU busy %")

# --- fio: the unit around fio (fslab/workloads/fio.py, fslab/fio/accounting.py) -------------

FIO_UNIT: tuple[Metric, ...] = (
    CPU_BUSY,
    Metric("cpu_iowait_system_wide", "%", label="system-wide CPU iowait %"),
    Metric("fio_wall_time", "s"),
    # fio's own process describes fio, not the filesystem: never ranked, never an answer
    Metric("fio_rusage_cpu", "s", label="fio's own CPU seconds"),
    Metric("fio_max_rss", "B"),
    Metric("cpu_seconds", "s"),
    Metric("daemon_cpu_seconds", "s"),
    Metric("device_read_bytes", "B"),
    Metric("device_write_bytes", "B"),
    Metric("device_ios", "count"),
    Metric("device_busy_time", "s"),
    *(Metric(f"{d}_io_bytes", "B", label=f"{d} bytes moved") for d in DIRECTIONS),
    # a ratio, not a share: above 1 the device read more than fio asked for (a 4 KiB read
    # of a 128 KiB ZFS record), below 1 reads were served from memory
    Metric("device_read_share", "ratio", label="device ÷ fio bytes read (under 1: from memory)"),
    Metric("write_amplification", "ratio", "lower",
           label="write amplification (device ÷ fio bytes)"),
    # CPU is ranked only as operations per CPU-second (system-wide: a daemon's work counts)
    Metric("ops_per_cpu_second", "ops/CPU-s", "higher", label="operations per CPU-second"),
    # S0's "efficiency", a rescaling of the line above: described, not ranked twice
    Metric("ops_per_cpu_percent", "ops/s per CPU%", label="operations per CPU %"),
)

# named groups outputs ask for: every fio rate (a unit that moved data); the device
# counters (a unit without them was not checked for being served from memory); the shares
# of fio's bytes the device saw (reads, writes: below half, a workload ran from memory)
FIO_RATES = tuple(m.key for m in FIO_JOB if m.quantity == "throughput")
DEVICE_COUNTERS = ("device_read_bytes", "device_write_bytes", "device_read_share",
                   "write_amplification")
DEVICE_SHARES = ("device_read_share", "write_amplification")

# --- what reached the devices during a step without fio (fslab/workloads/support/devices.py) --


def step_devices(prefix: str = "") -> tuple[Metric, ...]:
    """The device counters of a timed step (named with `prefix` where a suite counts several
    steps): described, never ranked; the shares are of the bytes the step moved, not fio's."""
    said = prefix.replace("_", " ")
    return (Metric(f"{prefix}device_read_bytes", "B"),
            Metric(f"{prefix}device_write_bytes", "B"),
            Metric(f"{prefix}device_ios", "count"),
            Metric(f"{prefix}write_amplification", "ratio",
                   label=f"{said}write amplification (device ÷ bytes written)"),
            Metric(f"{prefix}device_read_share", "ratio",
                   label=f"{said}device ÷ bytes read (under 1: from memory)"))


STEP_DEVICES = step_devices()

# --- replay: a captured command's file I/O issued again (fslab/workloads/replay.py) --------

# the operation kinds of a replay file (fslab/capture/format.py SIGNATURES)
_REPLAY_KINDS = ("open|close|read|write|seek|fsync|fdatasync|sync_file_range|ftruncate|truncate|"
                 "fallocate|copy|rename|unlink|rmdir|mkdir|link|symlink|stat|lstat|access|"
                 "fstat|getdents")
_REPLAY: tuple[Metric, ...] = (
    # the question: how long the captured command's file I/O takes on this filesystem
    Metric("replay_time", "s", "lower", label="total replay time", quantity="replay time",
           answer_rank=4),
    Metric("replay_ops_per_s", "ops/s", "higher", label="replayed operations per second",
           quantity="replay time"),
    # each call timed alone, in the replayer (docs/replay.md: what Python adds, measured)
    Metric(rf"op_({_REPLAY_KINDS})_(p50|p99)", "ns", "lower", "detail",
           lambda m: f"{m[2]} {m[1]} latency", quantity=r"\1 latency \2"),
    Metric("replay_operations", "count", label="operations issued"),
    # operations whose outcome differed from the capture (an errno here, success there, or
    # the other way), plus created/removed/bytes mismatches: findings, listed in fidelity.json
    Metric("fidelity_differences", "count", label="fidelity differences"),
    Metric("replay_bytes_read", "B"),
    Metric("replay_bytes_written", "B"),
    # --pace: the most an operation was issued after its captured time
    Metric("pace_lag", "s", label="most behind the captured pace"),
    *STEP_DEVICES)

# --- a timed step (fslab/system/measure.py) -------------------------------------------------

STEP_USAGE: tuple[Metric, ...] = (
    Metric("elapsed", "s", "lower", label="time", quantity="time to disk", answer_rank=21),
    # CPU % is described: a step that finishes sooner can show a higher %
    Metric("cpu_percent", "%"),
    Metric("major_faults", "count", "lower"),
    Metric("minor_faults", "count", "lower"),
    CPU_BUSY,
)

# --- the space a write cost (fslab/workloads/capacity.py space_measurements) -----------------

SPACE: tuple[Metric, ...] = (
    Metric("logical_bytes", "B"),
    Metric("space_consumed", "B", "lower", quantity="space used"),
    Metric("statvfs_used", "B", "lower", quantity="space used"),
    Metric("space_overhead", "B", "lower", quantity="space used"),
    Metric("space_overhead_pct", "%", "lower", quantity="space used"),
    Metric("space_saving_ratio", "ratio", "higher", quantity="space used", answer_rank=4),
    Metric("zpool_alloc", "B", "lower", quantity="space used"),
    Metric("zpool_dedupratio", "ratio", "higher"),
)

# --- the suites ------------------------------------------------------------------------------

_INTEGRITY = (
    # the fate of each damaged block; "detected" has no direction but says the most
    Metric("damaged", "count", role="outcome"),
    Metric("detected", "count", role="outcome", trials="damaged"),
    # the question: corruption that passed unnoticed (not collateral damage)
    Metric("silent", "count", "lower", "outcome", trials="damaged", answer_rank=1),
    Metric("healed", "count", "higher", "outcome", trials="damaged"),
    Metric("healed_after_scrub", "count", "higher", "outcome", trials="damaged"),
    Metric("collateral_damage", "count", "lower", "outcome"),
    Metric("mount_ok", "bool"),
    Metric("kernel_log_lines", "count"),
    Metric("reported_corruption_errs", "count"),
    Metric("reported_cksum_errors", "count"),
    Metric("scrub_clean", "bool"),
    Metric("scrub_corrected", "count"),
    Metric("scrub_uncorrectable", "count"),
    Metric("fsck_clean", "bool"),
    Metric("fiemap_agreement", "fraction", "higher"),
    Metric("tagged_blocks_found", "count"),
)

_AGING_STEP = tuple(
    m for state in ("aged", "unaged") for m in (
        Metric(f"grep_cost_{state}", "s/GB", "lower"),
        Metric(f"grep_seconds_{state}", "s", "lower"),
        Metric(f"layout_score_{state}", "fraction", "higher"),
        # a check that the grep read a cold cache (bytes of the tree still in memory
        # after the drop, sampled), not a speed: described, never ranked
        Metric(f"cold_cache_resident_{state}", "B")))

_AGING = (
    *_AGING_STEP,
    Metric("tree_bytes", "B"),
    Metric("tree_files", "count"),
    # the question: how much slower the aged tree reads (not its failed steps)
    Metric("aging_factor", "ratio", "lower", answer_rank=6),
    Metric("layout_measurable", "bool"),
    Metric("successful_pulls", "count"),
    Metric("failed_steps", "count", "lower"),
    Metric("pull_seconds_total", "s", "lower", answer_rank=24),
    Metric("resumes", "count"),
    Metric("written_bytes_total", "B"),
)

_ENOSPC = (
    Metric("image_bytes", "B"),
    Metric("usable_bytes", "B", "higher", quantity="usable space"),
    Metric("usable_fraction", "fraction", "higher", quantity="usable space"),
    # the question: how much fitted before ENOSPC (not the checker's verdict)
    Metric("filled_bytes", "B", "higher", answer_rank=5),
    Metric("filled_files", "count"),
    Metric("fill_seconds", "s"),
    Metric("fill_reached_enospc", "bool"),
    Metric("inodes_total", "count"),
    Metric("fill_errno", "code"),
    Metric(r"fill_failed_at_(\w+)", "bool"),          # the call's name in the metric
    Metric(r"when_full_(\w+)_ok", "bool", "higher"),
    Metric(r"when_full_(\w+)_errno", "code"),
    Metric("delete_unlink_failed", "count", "lower"),
    Metric("delete_needed_truncate", "count", "lower"),
    Metric("delete_left_behind", "count", "lower"),
    Metric("reclaimed_bytes", "B", "higher", quantity="space reclaimed"),
    Metric("reclaimed_fraction", "ratio", "higher", quantity="space reclaimed"),
    Metric("precious_intact", "bool", "higher"),
    Metric("checker_clean", "bool", "higher"),
)

CAPACITY_INITIAL = Metric("capacity_initial", "%", "higher", quantity="usable space")

SUITES: dict[str, tuple[Metric, ...]] = {
    "fio": FIO_JOB + FIO_UNIT,
    "integrity": _INTEGRITY,
    "smallfiles": (
        *SPACE,
        # the question: space per small file (not the space saving it also records)
        Metric("space_overhead_per_file", "B", "lower", answer_rank=2),
        Metric("create_time", "s", "lower"),
        *STEP_DEVICES),
    "largefile": (
        # the question: large-file creation time (not the space saving it also records)
        Metric("total_time", "s", "lower", quantity="time to write", answer_rank=3),
        Metric("write_throughput", "B/s", "higher", quantity="time to write"),
        CPU_BUSY,
        *SPACE,
        Metric("write_throughput_physical", "B/s"),
        Metric("zpool_capacity_pct", "%"),
        *STEP_DEVICES),
    # the question: dedup's space saving (not its read phase's IOPS)
    "dedup": (
        *SPACE,
        Metric("setup_time", "s", "lower", quantity="setup time"),
        Metric("setup_throughput", "B/s", "higher", quantity="setup time"),
        Metric("setup_throughput_physical", "B/s"),     # the study's rate: physical / time
        Metric("cpu_busy_setup_system_wide", "%"),
        Metric("cpu_busy_read_system_wide", "%"),
        # the study's reading: df's Used once the tree is written, and its excess over the data
        Metric("df_used", "B", label="df Used after the tree"),
        # not ranked: df Used includes what the empty filesystem already uses (an empty XFS
        # read 257.7 % at smoke); the ranked overhead is space_overhead_pct (the drop in space
        # available over the data)
        Metric("df_used_overhead_pct", "%",
               label="df Used over the data (the study's reading, with the empty filesystem's own use)"),
        *step_devices("setup_"),
        # the read phase is a fio unit
        *FIO_JOB,
        *FIO_UNIT),
    "capacity": (
        CAPACITY_INITIAL,
        Metric("available_bytes", "B", "higher", quantity="usable space", answer_rank=30),
        Metric("fs_total_of_raw", "%")),
    "tasks": (
        *STEP_USAGE,
        Metric("copied_bytes", "B"),     # what a copy task copied (its device bytes beside it)
        Metric("writeback", "s", "lower", quantity="time to disk"),
        # the two parts of a task's time until its data is on disk, summed per round by
        # recommend (fslab/recommend/measures.py SUMS): never recorded by the suite itself
        Metric("elapsed_with_writeback", "s", "lower", label="time incl. writeback",
               quantity="time to disk", answer_rank=20),
        CAPACITY_INITIAL,
        Metric("capacity_residual", "%", "higher"),
        *STEP_DEVICES,
        # a copy's device counters after its timed region (copy + sync): about 0
        *step_devices("writeback_")),
    "enospc": _ENOSPC,
    "crash": (
        Metric("crash_consistent", "bool", "higher"),
        Metric("fsck_clean", "bool", "higher"),
        Metric("recovery_mount_time", "s", "lower")),
    "aging": _AGING,
    "replay": _REPLAY,
    "features": (
        Metric("verified", "bool"),
        Metric("dedup_saved_bytes", "B"),
        Metric("compression_ratio", "ratio")),
}

# the application suites' own block (fslab/metrics/apps.py)
SUITES.update(APP_SUITES)

# Answer names the answer took before the catalogue that no suite records today: a record
# of an imported or older run named so is still answered as it was.
EARLIER: tuple[Metric, ...] = (
    Metric("time", "s", "lower", answer_rank=22),
    Metric("seconds", "s", "lower", answer_rank=23),
)
