"""Interleaved slices: a round's candidates of one fio case run as one block of one fio
process, each candidate's I/O cut into short slices that take turns.

Each candidate keeps its own fresh filesystem on its own loop image, made, mounted and
laid out as its own unit would be (all mounted at once); then one fio process runs the
case's job as S slices per candidate, a job section each, `stonewall` between them, in
cycles whose order is drawn from the seed and reversed every other cycle (ABCD DCBA ...:
a drift that is linear over a pair of cycles lands on every candidate alike). Whatever
the machine does over seconds (the host's writeback, a noisy neighbour, thermal state)
then falls on every candidate, which one unit per candidate, seconds apart, cannot give:
bare fio on this project's 2-core VM measured the within-pair sd of two filesystems at
1.7-3.2% this way against 2.9-7.5% with one fio process per side, the ratio between
different filesystems unchanged (docs/statistics.md).

What a slice leaves behind must not land in another candidate's slice: each slice ends
with `sync -f` of its own filesystem, run by fio's exec_postrun after the slice's timed
I/O (fio's runtime does not count it) and before the next slice starts (stonewall waits
for it). A buffered writer's own end_fsync stays inside its slice, as in its unit.

A candidate's value for the round is its slices together (fslab/fio/clones.py
`consecutive`): rates as its I/O over its slices' time, latency percentiles from its
slices' merged json+ bins; device counters from its own loop device (no other candidate
touches it); CPU from /proc/stat read at each slice's start and end (exec_prerun and
exec_postrun write the marks), so a candidate's CPU is its slices' only.
"""
from __future__ import annotations

import random
import shlex
from dataclasses import dataclass
from pathlib import Path

from fslab.fio.clones import consecutive, merge_clones
from fslab.system.cpu import CpuSample, parse_stat_line

SLICE_MS = 250        # the measured default (docs/statistics.md, bench/noise --settings sliced)
MIN_SLICES = 2
# what fio spends between two stonewalled jobs: its main loop polls the next job's start in
# 100 ms steps (bare fio, 8 slices of 250 ms on ext4: 4.08 s, with or without the drain,
# processes or threads): the block's wall time, not the slices' measured time
BETWEEN_SLICES_S = 0.26
# options that belong to one whole run of the job, which a slice replaces
WHOLE_RUN = ("runtime", "time_based", "ramp_time", "steadystate", "ss", "ss_dur",
             "steadystate_duration", "ss_ramp", "steadystate_ramp_time", "loops",
             "startdelay", "exec_prerun", "exec_postrun", "stonewall", "wait_for_previous",
             "new_group", "filename_format")

MARK_SCRIPT = """#!/bin/sh
# fslab slice mark: PHASE SECTION MARKS-FILE [DIRECTORY-TO-SYNC] [DAEMON-PID]
# one line per call: phase, section, wall clock, /proc/stat's cpu line (| daemon utime stime)
line="$1 $2 $(date +%s.%N) $(head -n1 /proc/stat)"
if [ -n "$5" ] && [ "$5" != - ] && [ -r "/proc/$5/stat" ]; then
  line="$line | $(sed 's/.*) //' "/proc/$5/stat" | cut -d' ' -f12,13)"
fi
echo "$line" >> "$3"
if [ "$1" = post ] && [ -n "$4" ] && [ "$4" != - ]; then sync -f "$4"; fi
"""


@dataclass(frozen=True)
class Member:
    """One candidate of a block: its fio options as its own unit would run them (page-cache
    policy and throttle applied), where its files are, and the job name they were laid
    out under (fio names files NAME.JOBNUM.FILENUM)."""
    label: str
    options: dict[str, str]
    directory: Path
    files_named: str
    daemon_pid: int | None = None


def why_not_sliced(options: dict[str, str]) -> str | None:
    """None when a job can run as slices, else why not: a slice is a share of a time-based
    job's runtime, so a job bound by its size, one that runs until steady, one with its own
    ramp or a start delay runs as whole units."""
    if options.get("time_based") in (None, "", "0"):
        return "its jobs are bound by their size, not time"
    if any(k in options for k in ("steadystate", "ss")):
        return "it runs until fio finds it steady"
    if float(str(options.get("ramp_time", "0")).rstrip("s") or 0) > 0:
        return "it has a ramp time of its own"
    if float(str(options.get("runtime", "0")).rstrip("s") or 0) <= 0:
        return "it has no runtime to share out"
    return None


def slice_count(options: dict[str, str], slice_ms: int) -> int:
    """Slices per candidate: its unit's runtime in slices of `slice_ms` (at least 2), so a
    candidate gets the I/O time its own unit would."""
    runtime_ms = float(str(options.get("runtime", "0")).rstrip("s") or 0) * 1000
    return max(MIN_SLICES, round(runtime_ms / slice_ms))


def seconds_per_candidate(options: dict[str, str], slice_ms: int) -> float:
    """A candidate's share of its block's fio wall time: its slices and fio's gaps."""
    return slice_count(options, slice_ms) * (slice_ms / 1000 + BETWEEN_SLICES_S)


def describe(options: dict[str, str], slice_ms: int) -> str:
    return f"interleaved slices of {slice_ms} ms, {slice_count(options, slice_ms)} per candidate"


def cycle_orders(members: int, cycles: int, seed: str) -> list[list[int]]:
    """Each cycle's order of the members: a seeded permutation, then its reverse, again."""
    rng = random.Random(seed)
    out: list[list[int]] = []
    for c in range(cycles):
        if c % 2:
            out.append(list(reversed(out[-1])))
        else:
            order = list(range(members))
            rng.shuffle(order)
            out.append(order)
    return out


def section_name(member: int, cycle: int) -> str:
    return f"c{member}s{cycle}"


def job_text(members: list[Member], orders: list[list[int]], slice_ms: int, mark: Path,
             marks: Path, title: str) -> str:
    """The block's job file: one section per slice, in the cycles' order."""
    lines = [f"# fslab block: {title}",
             f"# {len(members)} candidates x {len(orders)} slices of {slice_ms} ms, taking turns "
             "(stonewall); each slice ends with sync -f of its filesystem, outside its time",
             "# " + "; ".join(f"c{i} = {m.label}" for i, m in enumerate(members))]
    for cycle, order in enumerate(orders):
        for i in order:
            m = members[i]
            name = section_name(i, cycle)
            pid = str(m.daemon_pid) if m.daemon_pid else "-"
            lines += [f"[{name}]", f"directory={m.directory}"]
            lines += [f"{k}={v}" if v != "" else k for k, v in m.options.items()
                      if k not in WHOLE_RUN and k != "directory"]
            lines += [f"filename_format={m.files_named}.$jobnum.$filenum",
                      "time_based=1", f"runtime={slice_ms}ms", "stonewall",
                      "exec_prerun=" + shlex.join([str(mark), "pre", name, str(marks), "-", pid]),
                      "exec_postrun=" + shlex.join([str(mark), "post", name, str(marks),
                                                     str(m.directory), pid])]
    return "\n".join(lines) + "\n"


def member_of(section: str) -> tuple[int, int] | None:
    """(member, cycle) of a section name, None for anything else."""
    if not section.startswith("c") or "s" not in section:
        return None
    a, _, b = section[1:].partition("s")
    return (int(a), int(b)) if a.isdigit() and b.isdigit() else None


def split(doc: dict, members: int, job_name: str) -> dict[int, dict]:
    """Each member's share of the block's fio document, as a document of its own with one
    job named `job_name` (its slices merged: fslab/fio/clones.py `consecutive`)."""
    entries = merge_clones(list(doc.get("jobs") or []),
                           key=lambda e: (e.get("jobname"), e.get("groupid")))
    by_member: dict[int, list[dict]] = {i: [] for i in range(members)}
    for e in entries:
        got = member_of(str(e.get("jobname", "")))
        if got is not None and got[0] in by_member:
            by_member[got[0]].append(e)
    out = {}
    for i, slices in by_member.items():
        if not slices:
            continue
        job = consecutive(slices)
        job["jobname"] = job_name
        opts = dict(job.get("job options") or {})
        for k in ("runtime", "exec_prerun", "exec_postrun", "stonewall", "filename_format"):
            opts.pop(k, None)
        job["job options"] = opts
        share = {k: v for k, v in doc.items() if k != "jobs"}
        share["jobs"] = [job]
        out[i] = share
    return out


@dataclass(frozen=True)
class SliceTimes:
    """What the marks say of one member's slices together."""
    seconds: float                  # wall time from each slice's start mark to its end mark
    cpu_start: CpuSample            # /proc/stat summed as deltas: start zero, end the sum
    cpu_end: CpuSample
    daemon_cpu_seconds: float | None


def slice_times(marks: Path, members: int, tick: int) -> dict[int, SliceTimes]:
    """Per member, its slices' wall time, system-wide CPU and serving daemon CPU, each the
    sum over its slices of end mark minus start mark."""
    pre: dict[str, tuple[float, CpuSample, float | None]] = {}
    wall = {i: 0.0 for i in range(members)}
    busy = {i: 0 for i in range(members)}
    total = {i: 0 for i in range(members)}
    iowait = {i: 0 for i in range(members)}
    daemon: dict[int, float | None] = {i: None for i in range(members)}
    text = marks.read_text() if marks.exists() else ""
    for line in text.splitlines():
        head, _, tail = line.partition(" | ")
        parts = head.split(None, 3)
        if len(parts) < 4 or (got := member_of(parts[1])) is None:
            continue
        when, sample = float(parts[2]), parse_stat_line(parts[3])
        d = sum(int(x) for x in tail.split()) / tick if tail.strip() else None
        if parts[0] == "pre":
            pre[parts[1]] = (when, sample, d)
            continue
        if parts[1] not in pre:
            continue
        t0, s0, d0 = pre.pop(parts[1])
        i = got[0]
        wall[i] += when - t0
        busy[i] += sample.busy - s0.busy
        total[i] += sample.total - s0.total
        iowait[i] += sample.iowait - s0.iowait
        if d is not None and d0 is not None:   # a daemon serves this filesystem
            daemon[i] = (daemon[i] or 0.0) + d - d0
    zero = CpuSample(0, 0, 0)
    return {i: SliceTimes(wall[i], zero, CpuSample(busy[i], total[i], iowait[i]), daemon[i])
            for i in range(members) if total[i] > 0 or wall[i] > 0}
