"""The fio suite: study S2's five workloads, random I/O at queue depth 32 (and any job you
define), with sweeps.

Plan table:
    [[suite]]
    kind = "fio"
    workloads = ["randread", "randwrite", "seqread", "seqwrite", "mixed"]   # default: these
                                # five and randread-qd32, randwrite-qd32
    [suite.fio]                 # options for every job; pass through to fio unchanged
    ioengine = "libaio"
    [suite.jobs.myjob]          # define or override a workload's own options
    rw = "randrw"
    bs = "16k"
    [suite.sweep]               # every combination becomes its own case
    bs = ["4k", "64k", "1m"]
    numjobs = [1, 4]
    scale = true                # scale size/runtime by the profile (default true)
    unscaled = ["runtime"]      # these options as written at every profile (`--fio` sets it)

Or the user's own fio job files, each one case (see fslab/workloads/support/jobfile.py):
    [[suite]]
    kind = "fio"
    job_files = ["a.fio", "b.fio"]   # relative to the plan
    image_size = "2G"           # optional: loop image size (default: from the jobs' sizes)
    scale = false               # cap sizes/runtimes by the profile (default: only when the
                                # profile was chosen explicitly)

Paper values are S2's exact parameters (size=1G, runtime=60, 10 iterations);
smaller profiles cap file sizes and runtimes and the report says so.

A case is a MatrixCase (the suite's own jobs and sweeps: fslab writes the job file and
applies the page-cache policy) or a JobFileFioCase (a user's file, run as written); each
answers what the suite asks (refusal, describe, estimate, prepare, deadline, job params).
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson

from fslab.fio import cachepolicy
from fslab.system import deadline
from fslab.fio.accounting import UnitAccount, TICK as _TICK
from fslab.system.cpu import busy_percent, iowait_percent, sample
from fslab.system.devstat import source_device_of
from fslab.errors import FslabError, StepFailed, TimedOut
from fslab.filesystems.raw import Raw, is_raw
from fslab.workloads.support.jobfile import JobFileCase, job_file_cases
from fslab.system.proc import kill_group, run
from fslab.plan import SuiteSpec
from fslab.plan.profiles import Profile, parse_size
from fslab.records import Measurement
from fslab.workloads.base import Case, MountedFs, Suite, UnitContext, UnitFailed, register
from fslab.workloads import sliced
from fslab.fio.joberror import describe as describe_job_error
from fslab.fio.parse import FioParseError, declared_group_io, declared_io, job_measurements, load_fio_output

# Study S2: ioengine=sync, size=1G, runtime=60s, time_based; five jobs.
S2_COMMON = {"ioengine": "sync", "size": "1G", "runtime": "60", "time_based": "1",
             "group_reporting": "1"}
S2_JOBS: dict[str, dict[str, str]] = {
    "randread": {"rw": "randread", "bs": "4k", "numjobs": "4"},
    "randwrite": {"rw": "randwrite", "bs": "4k", "numjobs": "4"},
    "seqread": {"rw": "read", "bs": "1M", "numjobs": "1"},
    "seqwrite": {"rw": "write", "bs": "1M", "numjobs": "1"},
    "mixed": {"rw": "randrw", "rwmixread": "70", "bs": "4k", "numjobs": "4"},
}
# S2 ran every job with synchronous I/O, one request in flight per job; databases and VM
# images keep many in flight, which is where filesystems differ in their submission paths.
# libaio, not io_uring: io_uring can be turned off (kernel.io_uring_disabled, container
# seccomp profiles), libaio runs wherever fio does and with direct I/O (the default
# page-cache policy) keeps 32 requests queued just as well. With buffered I/O (--page-cache
# on, or a filesystem that refuses O_DIRECT) libaio submits synchronously: those runs say so
# in their cache policy.
QUEUE_JOBS: dict[str, dict[str, str]] = {
    "randread-qd32": {"rw": "randread", "bs": "4k", "numjobs": "1", "ioengine": "libaio",
                      "iodepth": "32"},
    "randwrite-qd32": {"rw": "randwrite", "bs": "4k", "numjobs": "1", "ioengine": "libaio",
                       "iodepth": "32"},
}
DEFAULT_WORKLOADS = [*S2_JOBS, *QUEUE_JOBS]   # the suite without a workload list
SIZE_KEYS = ("size", "filesize", "io_size")
JOB_FILE_DEADLINE_S = 6 * 3600   # a user's job file without [run] unit_timeout
WRITE_RW = {"write", "randwrite", "rw", "readwrite", "randrw", "trimwrite", "randtrim"}


def _s(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def scale_options(opts: dict[str, str], profile: Profile, size_factor: float | None) -> dict[str, str]:
    """Apply the profile: cap runtime, scale sizes (proportionally within a sweep)."""
    out = dict(opts)
    if "runtime" in out:
        out["runtime"] = _s(int(max(1, profile.runtime(float(out["runtime"].rstrip("s"))))))
    for k in SIZE_KEYS:
        if k in out and "%" not in out[k]:
            paper = parse_size(out[k])
            new = int(paper * size_factor) if size_factor is not None else profile.file_size(paper)
            new = max(new, 1 << 20)
            out[k] = f"{new // 1024}k"
    # a block larger than the file makes fio fail: cap it (the case records the bs used)
    if "size" in out and "bs" in out and "," not in out["bs"]:
        if parse_size(out["bs"]) > parse_size(out["size"]):
            out["bs"] = out["size"]
    return out


def job_text(name: str, opts: dict[str, str], directory: str, device: str | None = None) -> str:
    """The job file; with `device` (the raw driver) fio addresses the block device itself."""
    where = f"filename={device}" if device else f"directory={directory}"
    lines = [f"# fslab fio job: {name}",
             "# re-run by hand: fio --output-format=json+ job.fio  (point directory= at a test dir"
             " or filename= at a device)",
             f"[{name}]", where]
    lines += [f"{k}={v}" if v != "" else k for k, v in opts.items()
              if not (device and k == "filename")]
    return "\n".join(lines) + "\n"


def image_bytes_for(opts: dict[str, str]) -> int:
    """Room for every job clone's file plus filesystem overhead."""
    size = parse_size(opts.get("filesize") or opts.get("size") or "64M")
    jobs = int(opts.get("numjobs", "1"))
    nfiles = int(opts.get("nrfiles", "1"))
    data = size * jobs if nfiles == 1 or "filesize" not in opts else size * jobs * nfiles
    if "filename" in opts:   # the jobs share one named file (each its own region, if split)
        data = size + parse_size(opts.get("offset_increment", "0")) * (jobs - 1)
    return int(data * 1.4) + (96 << 20)


@register
class FioSuite(Suite):
    name = "fio"
    study = "S0, S2"
    description = ("fio workloads (S2: randread, randwrite, seqread, seqwrite, mixed; and "
                   "randread-qd32, randwrite-qd32)")

    def scales_a_study(self, spec: SuiteSpec) -> bool:
        return "job_files" not in spec.options      # the user's own job files: capped, no study

    def cases(self, spec, profile: Profile) -> list[FioCase]:
        o = spec.options
        if "job_files" in o:
            return [JobFileFioCase(c.name, c.params, c.config, c.image_bytes)
                    for c in job_file_cases(o, profile)]
        unknown = set(o) - {"fio", "jobs", "sweep", "scale", "unscaled", "per_job_regions"}
        if unknown:
            raise FslabError(f"[[suite]] kind='fio': unknown key(s) {sorted(unknown)}; "
                             "use [suite.fio] for fio options")
        common = {k: _s(v) for k, v in (o.get("fio") or {}).items()}
        jobs = {**S2_JOBS, **QUEUE_JOBS,
                **{n: {k: _s(v) for k, v in d.items()} for n, d in (o.get("jobs") or {}).items()}}
        names = spec.workloads or (list(o["jobs"]) if o.get("jobs") and
                                   not set(o["jobs"]) & set(DEFAULT_WORKLOADS)
                                   else list(DEFAULT_WORKLOADS))
        for n in names:
            if n not in jobs:
                raise FslabError(f"fio workload {n!r} is not defined; known: {', '.join(jobs)} "
                                 "(define it under [suite.jobs.NAME])")
        sweep = {k: [_s(x) for x in (v if isinstance(v, list) else [v])]
                 for k, v in (o.get("sweep") or {}).items()}
        do_scale = o.get("scale", True)
        unscaled = set(o.get("unscaled") or ())   # what the user typed (--fio) runs as typed
        cases = []
        for n in names:
            base = {**S2_COMMON, **jobs[n], **common}
            combos = [dict(zip(sweep, vals)) for vals in itertools.product(*sweep.values())] or [{}]
            # within a size sweep, scale every size by one factor so the sizes stay distinct
            factor = None
            swept_sizes = [parse_size(v) for k in SIZE_KEYS for v in sweep.get(k, [])]
            if do_scale and swept_sizes and profile.max_file_bytes is not None:
                factor = min(1.0, profile.max_file_bytes / max(swept_sizes))
            seen = set()
            for combo in combos:
                opts = {**base, **combo}
                if do_scale:
                    opts = {**scale_options(opts, profile, factor),
                            **{k: v for k, v in opts.items() if k in unscaled}}
                params = {"workload": n, **{k: opts[k] for k in sweep}}   # the case's file size
                if do_scale and profile.steady_state:
                    until_steady(opts, profile.steady_state, explicit={**common, **jobs[n]})
                if o.get("per_job_regions"):
                    split_regions(opts)
                _finish_options(opts, explicit={**common, **jobs[n], **combo})
                key = tuple(sorted(params.items()))
                if key in seen:   # scaling collapsed two sweep points into one
                    continue
                seen.add(key)
                cases.append(MatrixCase(name=n, params=params, config=opts,
                                        image_bytes=image_bytes_for(opts)))
        return cases

    def refuses(self, case: FioCase, driver, fs_label: str) -> str | None:
        return case.refusal(driver, fs_label)

    def describe(self, case: FioCase) -> dict:
        return case.describe()

    def estimate_seconds(self, case: FioCase, slice_ms: int | None = None) -> float | None:
        """One unit's seconds; with `slice_ms`, a candidate's share of its round's block."""
        if slice_ms and isinstance(case, MatrixCase) and self.slicing(case) is None:
            return case.estimate_seconds(sliced.seconds_per_candidate(case.config, slice_ms))
        return case.estimate_seconds()

    def measure(self, ctx: UnitContext, case: FioCase) -> list[Measurement]:
        job_path, _ = ctx.artifact("job.fio")
        out_path, out_rel = ctx.artifact("fio.json")
        log_path, _ = ctx.artifact("fio.log")
        with self.mounted(ctx, case) as (directory, inst):
            device = inst.devices[0] if is_raw(inst) else None
            daemon = ctx.driver.serving_daemon()
            cwd = case.prepare(ctx, directory, inst, device, daemon, job_path, log_path)
            acct = UnitAccount.start(inst.devices if inst is not None else
                                     [d for d in [source_device_of(str(directory))] if d],
                                     daemon[1] if daemon else None)
            a = sample()
            t0 = time.perf_counter()
            with open(log_path, "wb") as log:
                p = subprocess.Popen(["fio", "--output-format=json+", f"--output={out_path}",
                                      str(job_path)], stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                                     start_new_session=True)   # its own group: killed as one
                try:
                    status, ru = deadline.wait(p.pid, case.deadline(ctx), str(directory))
                except deadline.Hung as e:
                    acct.stop()
                    recovered = ctx.driver.recover_after_hang(inst) if inst is not None else None
                    raise UnitFailed(str(e) + (f"; {recovered}" if recovered else "")) from None
                except BaseException:   # Ctrl-C, SIGTERM: fio's job processes go too
                    kill_group(p)
                    raise
                p.returncode = os.waitstatus_to_exitcode(status)
            elapsed = time.perf_counter() - t0
            ctx.phases["io"] = elapsed
            b = sample()
            acct.stop()
            case.keep_logs(directory, ctx)
        # CPU % of a fixed-time job is described, never ranked: more work in the same
        # time costs more CPU; the ranked measure is ops_per_cpu_second (accounting.py).
        # fio's own process (its CPU, its peak memory) describes fio, not the filesystem
        m = self.metrics.measure
        ms = [m("cpu_busy_system_wide", busy_percent(a, b), out_rel),
              m("cpu_iowait_system_wide", iowait_percent(a, b), out_rel),
              m("fio_wall_time", elapsed, out_rel),
              m("fio_rusage_cpu", ru.ru_utime + ru.ru_stime, out_rel),
              m("fio_max_rss", ru.ru_maxrss * 1024, out_rel)]
        try:
            doc = load_fio_output(out_path.read_bytes() if out_path.exists() else b"", str(out_path))
        except FioParseError as e:
            raise UnitFailed(f"fio exit {p.returncode}: {_tail(log_path) or e}", ms) from None
        return self._results(ctx, case, doc, acct, elapsed, out_rel, ms, p.returncode,
                             _tail(log_path))

    def _results(self, ctx: UnitContext, case: FioCase, doc: dict, acct: UnitAccount,
                 elapsed: float, out_rel: str, ms: list[Measurement], returncode: int | None,
                 log_tail: str) -> list[Measurement]:
        """A unit's records from its fio document and accounting (a unit's own fio run or
        its share of a block); UnitFailed when fio or a job failed."""
        ms = ms + acct.measurements(doc, elapsed, out_rel)
        jobs = job_measurements(doc)
        names = job_labels(jobs)
        for job, name in zip(jobs, names):
            for m in job.measurements:
                m.artifact = out_rel
                if m.metric.endswith("_runtime"):   # fio/parse.py SHORT_RUN_MS
                    ctx.log(f"job {name}: {m.metric.split('_')[0]}s done in {m.value * 1000:.0f} "
                            "ms: fio times whole ms, so its IOPS and bandwidth are not ranked "
                            "(its latencies are)")
                m.params = case.job_params(m.params, job, name, len(jobs))
            ms += job.measurements
        failed = [j for j in jobs if j.error]
        if returncode != 0 or failed:
            why = describe_job_error(failed[0]) if failed else "no job reported an error"
            raise UnitFailed(f"fio exit {returncode}, {why}" + (f": {log_tail}" if log_tail else ""), ms)
        return ms

    def slicing(self, case: Case) -> str | None:
        """None when this case's units of a round can run as one block of interleaved slices
        (fslab/workloads/sliced.py), else why they run as whole units."""
        if not isinstance(case, MatrixCase):
            return "a job file runs as written"
        return sliced.why_not_sliced(case.config)

    def measure_block(self, ctxs: list[UnitContext], case: Case, slice_ms: int,
                      block_dir: Path, seed: str) -> list[list[Measurement] | UnitFailed]:
        """Every candidate's unit of this case in one round as one block: each its own fresh
        filesystem, mounted together, laid out as its unit would be, then one fio process
        running their slices in turn (fslab/workloads/sliced.py); each candidate's records
        from its share. Per candidate: its records, or UnitFailed."""
        assert isinstance(case, MatrixCase)
        out: dict[int, list[Measurement] | UnitFailed] = {}
        held: list[tuple[int, MountedFs]] = []
        members: list[tuple[int, sliced.Member, object, tuple[str, int] | None]] = []
        try:
            for i, ctx in enumerate(ctxs):
                mounted = self.mounted(ctx, case)
                try:
                    directory, inst = mounted.__enter__()
                    held.append((i, mounted))
                    daemon = ctx.driver.serving_daemon()
                    job_path, _ = ctx.artifact("job.fio")
                    log_path, _ = ctx.artifact("fio.log")
                    opts = case.prepared_options(ctx, directory, inst, daemon, job_path, log_path)
                    members.append((i, sliced.Member(ctx.spec.label, opts, directory, case.name,
                                                     daemon[1] if daemon else None), inst, daemon))
                except UnitFailed as e:
                    out[i] = e
                except (StepFailed, FslabError, OSError) as e:
                    out[i] = UnitFailed(f"{type(e).__name__}: {e}")
            if members:
                got = self._run_block(ctxs, case, members, slice_ms, block_dir, seed)
                out.update(got)
        finally:
            for i, mounted in reversed(held):
                try:
                    mounted.__exit__(None, None, None)
                except (StepFailed, FslabError, OSError) as e:
                    prior = out.get(i)
                    why = f"{type(e).__name__}: {e}"
                    out[i] = UnitFailed(f"{prior}; {why}" if isinstance(prior, UnitFailed) else why,
                                        prior if isinstance(prior, list) else prior.measurements
                                        if isinstance(prior, UnitFailed) else [])
        return [out.get(i, UnitFailed("not run: the block stopped before it")) for i in range(len(ctxs))]

    def _run_block(self, ctxs, case, members, slice_ms, block_dir, seed):
        block_dir.mkdir(parents=True, exist_ok=True)
        mark = block_dir / "mark.sh"
        mark.write_text(sliced.MARK_SCRIPT)
        mark.chmod(0o755)
        marks, job_path = block_dir / "marks.txt", block_dir / "block.fio"
        out_path, log_path = block_dir / "fio.json", block_dir / "fio.log"
        count = sliced.slice_count(case.config, slice_ms)
        orders = sliced.cycle_orders(len(members), count, seed)
        mems = [m for _, m, _, _ in members]
        title = (f"{case.name} round {ctxs[members[0][0]].key.iteration}: "
                 + ", ".join(m.label for m in mems))
        job_path.write_text(sliced.job_text(mems, orders, slice_ms, mark, marks, title))
        for i, _, _, _ in members:
            ctxs[i].note_workload(design=sliced.describe(case.config, slice_ms))
        accounts = [UnitAccount.start(inst.devices if inst is not None else [],
                                      daemon[1] if daemon else None)
                    for _, _, inst, daemon in members]
        limit = sum(case.deadline(ctxs[i]) for i, _, _, _ in members)
        t0 = time.perf_counter()
        with open(log_path, "wb") as log:
            # in the block's directory: fio writes each exec_prerun/postrun's output there
            # (SECTION.prerun.txt), never into the user's working directory
            p = subprocess.Popen(["fio", "--output-format=json+", f"--output={out_path}",
                                  str(job_path)], stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True, cwd=block_dir)
            try:
                status, _ = deadline.wait(p.pid, limit, str(block_dir))
            except deadline.Hung as e:
                for a in accounts:
                    a.stop()
                said = [ctxs[i].driver.recover_after_hang(inst) for i, _, inst, _ in members
                        if inst is not None]
                why = (f"{e}; the block of {len(members)} filesystems' slices, each its unit's "
                       f"{case.deadline(ctxs[members[0][0]]):.3g} s" + "".join(f"; {r}" for r in said if r))
                return {i: UnitFailed(why) for i, _, _, _ in members}
            except BaseException:
                kill_group(p)
                raise
            p.returncode = os.waitstatus_to_exitcode(status)
        block_seconds = time.perf_counter() - t0
        for a in accounts:
            a.stop()
        times = sliced.slice_times(marks, len(members), _TICK)
        try:
            doc = load_fio_output(out_path.read_bytes() if out_path.exists() else b"", str(out_path))
        except FioParseError as e:
            why = f"fio exit {p.returncode}: {_tail(log_path) or e}"
            return {i: UnitFailed(why) for i, _, _, _ in members}
        shares = sliced.split(doc, len(members), case.name)
        results: dict[int, list[Measurement] | UnitFailed] = {}
        rel_block = _relative(block_dir, ctxs[members[0][0]])
        for k, (i, member, _, _) in enumerate(members):
            ctx, acct = ctxs[i], accounts[k]
            share_path, out_rel = ctx.artifact("fio.json")
            share = shares.get(k)
            ctx.phases["io"] = times[k].seconds if k in times else block_seconds / len(members)
            ctx.phases["block_io"] = block_seconds
            (ctx.artifact("block.json")[0]).write_text(json.dumps({
                "design": "interleaved slices", "block": rel_block, "slice_ms": slice_ms,
                "slices": count, "member": f"c{k}", "members": [m.label for m in mems],
                "orders": orders}, indent=1))
            if share is None:
                results[i] = UnitFailed(f"fio exit {p.returncode}: no slice of {member.label} "
                                        f"reported: {_tail(log_path)}")
                continue
            share_path.write_bytes(orjson.dumps(share, option=orjson.OPT_INDENT_2))
            t = times.get(k)
            m = self.metrics.measure
            ms: list[Measurement] = []
            if t is not None:   # CPU over this candidate's slices only (the marks)
                acct.cpu_seconds = t.cpu_end.busy / _TICK
                acct.cpu_busy_percent = busy_percent(t.cpu_start, t.cpu_end)
                acct.daemon_cpu_seconds = t.daemon_cpu_seconds
                ms = [m("cpu_busy_system_wide", busy_percent(t.cpu_start, t.cpu_end), out_rel),
                      m("cpu_iowait_system_wide", iowait_percent(t.cpu_start, t.cpu_end), out_rel),
                      m("fio_wall_time", t.seconds, out_rel)]
            try:
                results[i] = self._results(ctx, case, share, acct, t.seconds if t else 0.0,
                                           out_rel, ms, p.returncode, _tail(log_path))
            except UnitFailed as e:
                results[i] = e
        return results


class FioCase(Case):
    """A case of the fio suite: what the suite asks of it, answered by its kind."""

    def refusal(self, driver, fs_label: str) -> str | None:
        """None if it can run on this filesystem, else one line saying why not."""
        return None

    def describe(self) -> dict:
        raise NotImplementedError

    def estimate_seconds(self) -> float | None:
        return None

    def prepare(self, ctx: UnitContext, directory: Path, inst, device: str | None,
                daemon: tuple[str, int] | None, job_path: Path, log_path: Path) -> Path | None:
        """The job file written to `job_path`, the files it needs laid out, the cache policy
        said; returns fio's working directory (None: this one)."""
        raise NotImplementedError

    def deadline(self, ctx: UnitContext) -> float:
        """The unit's deadline (fslab/system/deadline.py)."""
        raise NotImplementedError

    def keep_logs(self, directory: Path, ctx: UnitContext) -> None:
        """What the job left in the filesystem that is worth keeping (its own logs)."""

    def job_params(self, params: dict, job, name: str, jobs: int) -> dict:
        """The params of a job's records (`jobs`: how many job entries fio reported)."""
        return {**params, "job": name} if jobs > 1 else params


class MatrixCase(FioCase):
    """One of the suite's own jobs (S2's, [suite.jobs], a sweep point): `config` holds its
    fio options; fslab writes the job file and applies the run's page-cache policy."""
    config: dict[str, str]

    def describe(self) -> dict:
        return {"fio_options": dict(self.config)}

    def estimate_seconds(self, io_seconds: float | None = None) -> float | None:
        """Runtime + ramp (or `io_seconds`, a block's share), plus laying the files out at
        ~400 MiB/s and ~2 s to make, mount and tear down the filesystem (the default run's
        units on this project's 2-core development machine: 1.0-1.8 s beyond the runtime on
        ext4, up to 5.8 s on zfs-fuse)."""
        opts = self.config
        runtime, ramp = _seconds(opts, "runtime"), _seconds(opts, "ramp_time")
        size = _bytes_written(opts)
        moving = size / (400 << 20)
        if io_seconds is not None:
            run, ramp = io_seconds, 0.0
        elif opts.get("time_based") not in (None, "0") and runtime:
            run = runtime
        else:   # size-bound, at most runtime
            run = min(moving, runtime) if runtime else moving
        return run + ramp + moving + 2.0

    def prepare(self, ctx, directory, inst, device, daemon, job_path, log_path):
        self.prepared_options(ctx, directory, inst, daemon, job_path, log_path, device)
        return None

    def prepared_options(self, ctx: UnitContext, directory: Path, inst, daemon,
                         job_path: Path, log_path: Path, device: str | None = None) -> dict[str, str]:
        """The unit's fio options as it runs them (page-cache policy and throttle applied),
        its job file written and its files laid out."""
        policy = cachepolicy.apply(ctx.page_cache, self.config, str(directory), device,
                                   ctx.driver, inst)
        opts = _throttled(policy.options, ctx.spec.throttle)
        _describe_policy(ctx, policy.description, daemon)
        if policy.changed_filesystem and inst is not None:   # read back what the unit runs on
            ctx.environment.setdefault("filesystem", {})["in_effect"] = \
                ctx.driver.effective_options(inst)
        job_path.write_text(job_text(self.name, opts, str(directory), device))
        if device is None:   # lay the files out first: the counters cover only the job
            # writing its files: 10 MiB/s at worst (never the measured job's override)
            limit = deadline.deadline_for(0, 0, _bytes_written(opts))
            t = time.perf_counter()
            try:
                _layout(job_path, log_path, str(directory), limit)
                ctx.phases["layout"] = time.perf_counter() - t
            except TimedOut:
                recovered = ctx.driver.recover_after_hang(inst)
                raise UnitFailed(f"hung: no result after {limit:.3g} s (fio laying out "
                                 "its files)" + (f"; {recovered}" if recovered else "")) \
                    from None
            if policy.cold_after_layout:
                inst.cold_cache()
        return opts

    def deadline(self, ctx):
        """From the runtime, ramp and bytes it asked for (the cache policy changes none)."""
        opts = self.config
        return deadline.deadline_for(_seconds(opts, "runtime"), _seconds(opts, "ramp_time"),
                                     _bytes_written(opts), ctx.unit_timeout)


class JobFileFioCase(FioCase):
    """A user's job file (fslab/workloads/support/jobfile.py; `config` is its
    JobFileCase): it runs as written, inside the filesystem under test, and its records say
    what each job does."""
    config: JobFileCase

    def refusal(self, driver, fs_label):
        if isinstance(driver, Raw):
            return (f"job file {self.config.job.path.name} refused on {fs_label}: job files run "
                    "inside a filesystem and the raw device has none")
        return self.config.refusal or self.config.job.refusal_for(fs_label, driver.ioctls)

    def describe(self):
        return {"job_file": str(self.config.job.path), "fio_job_as_run": self.config.text,
                "job_io": self.config.io, "job_io_text": self.config.io_text(),
                "job_notes": self.config.notes}

    def estimate_seconds(self) -> float | None:
        """The file's timed seconds as run (JobFileCase.timed_seconds) and ~2 s to make,
        mount and tear down the filesystem, as MatrixCase's (laying its files out is not
        counted); None when a job is bound by its size alone."""
        timed = self.config.timed_seconds()
        return None if timed is None else timed + 2.0

    def prepare(self, ctx, directory, inst, device, daemon, job_path, log_path):
        cwd = self.config.prepare(directory, ctx)
        job_path.write_text(_throttled_text(self.config, ctx.spec.throttle))
        # the user's file runs as written (its own direct=), its files laid out first by
        # fio itself (--create_only), so the device counters start with the timed I/O: a
        # read job's 64 MiB layout counted against a write job's 4 MiB made ext4's write
        # amplification 20-35x where its writes cost 1.5x (issue 36). A job that lays
        # its files out again (overwrite=1) is counted with it, as fio does it timed.
        # (which jobs ran direct or buffered: the run's job_files environment)
        _describe_policy(ctx, "job files as written: each job's own direct= (none "
                         "added: buffered unless it sets direct=1); its files laid out "
                         "first by fio --create_only=1 (device counters from the timed I/O on)",
                         daemon)
        if device is None:
            limit = deadline.deadline_for(0, 0, self.image_bytes or 0)
            try:
                _layout(job_path, log_path, str(directory), limit, cwd=str(cwd))
            except TimedOut:
                recovered = ctx.driver.recover_after_hang(inst)
                raise UnitFailed(f"hung: no result after {limit:.3g} s (fio laying out "
                                 "its files)" + (f"; {recovered}" if recovered else "")) \
                    from None
        return cwd

    def deadline(self, ctx):
        """A user's file: its runtimes are its own ([run] unit_timeout, else hours)."""
        return ctx.unit_timeout or max(JOB_FILE_DEADLINE_S,
                                       deadline.deadline_for(0, 0, self.image_bytes or 0))

    def keep_logs(self, directory, ctx):
        self.config.keep_logs(directory, ctx)

    def job_params(self, params, job, name, jobs):
        """What the job does (its declared I/O): its answer is chosen by it. An entry fio
        merged from several jobs (group_reporting) is named by all of them and does what
        they do together: fio gives it the first one's name and the last one's rw=."""
        members = next((g for g in self.config.job.reports()
                        if len(g) > 1 and g[0][0] == job.job_name), None)
        if members and len({n for n, _ in members}) > 1:
            names = list(dict.fromkeys(n for n, _ in members))
            return {**params, "job": "+".join(names),
                    **declared_group_io([o for _, o in members])}
        return {**params, "job": name, **declared_io(job.options)}


def _relative(path: Path, ctx: UnitContext) -> str:
    """`path` as the store names raw files: relative to the results directory."""
    depth = len(Path(ctx.artifact_rel).parts)
    root = ctx.artifact_dir
    for _ in range(depth):
        root = root.parent
    return str(path.relative_to(root))


def _throttled(opts: dict[str, str], x: float | None) -> dict[str, str]:
    """A candidate's planted slowdown (fslab/fio/throttle.py) in the job's options."""
    from fslab.fio import throttle
    if not x:
        return opts
    if (key := throttle.conflict(opts)):
        raise UnitFailed(f"throttle: the job sets {key} itself, which the throttle's idling replaces")
    return {**opts, **throttle.fio_options(x)}


def _throttled_text(job: JobFileCase, x: float | None) -> str:
    from fslab.fio import throttle
    if not x:
        return job.text
    for name, opts in job.job.jobs():
        if (key := throttle.conflict(opts)):
            raise UnitFailed(f"throttle: job '{name}' of {job.job.path.name} sets {key} itself, "
                             "which the throttle's idling replaces")
    return throttle.into_job_text(job.text, x)


def _seconds(opts: dict[str, str], key: str) -> float:
    try:
        return float(str(opts.get(key, "0")).rstrip("s") or 0)
    except ValueError:
        return 0.0


def _bytes_written(opts: dict[str, str]) -> int:
    """Every clone's file: what the layout writes (and a size-bound job moves)."""
    try:
        return parse_size(opts.get("size", "0")) * int(opts.get("numjobs", "1") or 1)
    except (ValueError, TypeError):
        return 0


def _layout(job_path: Path, log_path: Path, directory: str, limit: float,
            cwd: str | None = None) -> None:
    """fio's setup phase alone (create and fill the files), then everything on the device;
    TimedOut if it takes longer than the unit's deadline."""
    r = run(["fio", "--create_only=1", "--output-format=json", str(job_path)], check=False,
            timeout=limit, cwd=cwd)
    with open(log_path, "a") as log:
        log.write(r.stderr)
    if r.returncode != 0:
        raise UnitFailed(f"fio layout exit {r.returncode}: {_tail(log_path)}")
    run(["sync", "-f", directory], timeout=limit, check=False)


def _describe_policy(ctx: UnitContext, sentence: str, daemon: tuple[str, int] | None) -> None:
    """The cache policy and serving daemon, stored with the filesystem's environment."""
    fs = ctx.environment.setdefault("filesystem", {})
    fs["cache_policy"] = sentence
    if daemon:
        fs["daemon"] = daemon[0]


def job_labels(jobs: list) -> list[str]:
    """Each job entry's name; clones that share a name (numjobs without group_reporting)
    are told apart as NAME.0, NAME.1, ..."""
    counts: dict[str, int] = {}
    for j in jobs:
        counts[j.job_name] = counts.get(j.job_name, 0) + 1
    seen: dict[str, int] = {}
    out = []
    for j in jobs:
        if counts[j.job_name] > 1:
            out.append(f"{j.job_name}.{seen.get(j.job_name, 0)}")
            seen[j.job_name] = seen.get(j.job_name, 0) + 1
        else:
            out.append(j.job_name)
    return out


SS_KEYS = ("steadystate", "ss", "steadystate_duration", "ss_dur", "steadystate_ramp_time",
           "ss_ramp")


def until_steady(opts: dict[str, str], steady: tuple[int, int, int],
                 explicit: dict[str, str]) -> None:
    """A time-based job runs until fio finds its window steady (every second's rate within
    20% of the window's mean: SNIA PTS's first rule; fslab/fio/parse.py checks the second,
    the fitted slope) or the profile's ceiling; a job that sets its own steady state, or is
    not time-based, is left as it is. Sequential jobs are judged by bandwidth."""
    if opts.get("time_based") in (None, "0") or any(k in explicit for k in SS_KEYS):
        return
    ramp, window, ceiling = steady
    rw = opts.get("rw", opts.get("readwrite", "read"))
    measure = "bw" if rw in ("read", "write", "rw", "readwrite", "trim") else "iops"
    opts.update({"steadystate": f"{measure}:20%", "ss_dur": f"{window}s",
                 "ss_ramp": f"{ramp}s",
                 "runtime": _s(max(ceiling, int(_seconds(opts, "runtime") or 0)))})


def split_regions(opts: dict[str, str]) -> None:
    """Jobs sharing one file each get their own region of it (`size` / numjobs, laid end
    to end with offset_increment), so sequential jobs do not read the same offsets at once;
    the file stays `size` long."""
    jobs = int(opts.get("numjobs", "1") or 1)
    if "filename" not in opts or jobs < 2:
        return
    per = parse_size(opts["size"]) // jobs // (1 << 20) * (1 << 20)   # whole MiB: aligned
    if per < parse_size(opts.get("bs", "4k")):
        raise FslabError(f"per_job_regions: size {opts['size']} / {jobs} jobs leaves less than "
                         f"one block (bs {opts.get('bs')}) per job")
    opts["size"] = opts["offset_increment"] = f"{per >> 20}M"


def _finish_options(opts: dict[str, str], explicit: dict[str, str]) -> None:
    """Buffered writes must reach the disk inside the measurement: end_fsync=1 unless told."""
    rw = opts.get("rw", "read")
    if rw in WRITE_RW and opts.get("direct", "0") != "1" and "end_fsync" not in explicit:
        opts["end_fsync"] = "1"


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])
