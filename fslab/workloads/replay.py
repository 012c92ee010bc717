"""A captured command's file I/O replayed on each filesystem (docs/replay.md).

    fslab capture --out W.replay --dir DIR -- COMMAND...
    fslab run --replay W.replay --fs ext4,xfs          # or [[suite]] kind="replay" file="W.replay"

On each fresh filesystem: the initial state the command found is made (random content,
the sizes captured), synced and dropped from the page cache; then the operations are
issued in their order per thread, threads concurrently, as fast as possible or at the
captured pace (`pace = true`, --pace), in a process of its own under the unit's deadline
(fslab/workloads/support/replayer.py). The fidelity check follows every replay: each
operation's outcome against the capture's, bytes read and written, files created and
removed; a difference is a finding, listed in the unit's fidelity.json and its log.
"""
from __future__ import annotations

import sys
from pathlib import Path

from fslab.capture.format import SYNC_KINDS, Replay, load
from fslab.errors import FslabError
from fslab.plan import SuiteSpec
from fslab.plan.profiles import Profile
from fslab.records import Measurement
from fslab.system.deadline import deadline_for
from fslab.system.proc import run
from fslab.workloads.base import Case, CacheUse, Suite, UnitContext, UnitFailed, register
from fslab.workloads.support.devices import DeviceAccount
from fslab.workloads.support.replayer import (make_initial_state, outcome_from_json,
                                              snapshot_paths)

MIN_IMAGE = 512 << 20
_loaded: dict[str, Replay] = {}


def replay_of(path: str) -> Replay:
    """A replay file read once per process (cases and units of one run share it)."""
    if path not in _loaded:
        _loaded[path] = load(Path(path))
    return _loaded[path]


# What a replay unit takes, from its operations: the captured duration is no guide (it
# holds strace's cost per call and the program's CPU time, which the replay does not
# have: a decide said 10 min 16 s for a race that took 1 min 40 s). The unit's fixed part
# (mkfs, mount, the initial state synced and dropped, the replayer's start, the fidelity
# check, unmount) and the per-call costs are those of fslab's loop images: a sync 0.35 ms
# on a quiet machine and 1-4 ms on a busy one, another call 12-30 µs with the replayer's
# own cost (bench/replay, docs/replay.md).
UNIT_FIXED_S = 3.0
SYNC_S = 2e-3
CALL_S = 30e-6
BYTES_PER_S = 200 << 20


def unit_seconds(r: Replay, pace: bool) -> float:
    """A replay unit's duration, estimated from what it issues (pace: its captured time)."""
    counts = r.counts()
    syncs = sum(n for k, n in counts.items() if k in SYNC_KINDS)
    calls = sum(counts.values()) - syncs
    written = r.data_bytes()[1] + sum(e.size for e in r.init)
    issued = syncs * SYNC_S + calls * CALL_S + written / BYTES_PER_S
    return UNIT_FIXED_S + (max(issued, r.duration) if pace else issued)


def check_pace(r: Replay, name: str) -> None:
    """--pace needs each thread's times in order: an edited or merged file whose times go
    backwards in a thread has no schedule to keep."""
    last: dict[int, float] = {}
    for n, o in enumerate(r.ops, start=1):
        if o.t < last.get(o.thread, 0.0):
            raise FslabError(f"{name}: --pace cannot keep this schedule: operation {n} of "
                             f"thread {o.thread} is due at {o.t:.6f} s, before the one it "
                             f"follows ({last[o.thread]:.6f} s); replay it without --pace")
        last[o.thread] = o.t


@register
class ReplaySuite(Suite):
    name = "replay"
    needs_files = "replays file operations: needs a filesystem"
    description = "a command's captured file I/O (fslab capture) replayed on each filesystem"

    def cases(self, spec: SuiteSpec, profile: Profile) -> list[Case]:
        o, _ = self.options(spec, {"file", "pace", "seed", "compressible"})
        if not o.get("file"):
            raise FslabError("[[suite]] kind='replay' needs file = \"W.replay\" "
                             "(fslab capture --out W.replay -- COMMAND...)")
        path = str(Path(o["file"]).resolve())
        r = replay_of(path)
        if not r.ops:
            raise FslabError(f"{path}: no operations to replay")
        pace = bool(o.get("pace", False))
        zeros = o.get("compressible", 0.0)
        if not isinstance(zeros, (int, float)) or not 0 <= zeros < 1:
            raise FslabError(f"[[suite]] kind='replay' compressible = {zeros!r}: the share of "
                             "each 4 KiB block written as zeros, from 0 (random, the default) "
                             "to below 1")
        if pace:
            check_pace(r, path)
        reads, writes = r.data_bytes()
        initial = sum(e.size for e in r.init)
        return [Case(Path(path).stem, {"replay": Path(path).name, "pace": pace,
                                       "operations": len(r.ops)},
                     config={"file": path, "pace": pace, "seed": int(o.get("seed", 0)),
                             "zeros": float(zeros)},
                     image_bytes=max(MIN_IMAGE, 2 * (initial + writes) + (64 << 20)))]

    def cache_policy(self, page_cache: str) -> CacheUse:
        return CacheUse("the command's own calls and flags as captured (buffered unless it "
                        "asked for O_DIRECT), the initial state dropped from the page cache "
                        "before the replay", buffered=True)

    def describe(self, case: Case) -> dict:
        return {"parameters": dict(case.params)}

    def estimate_seconds(self, case: Case) -> float | None:
        return unit_seconds(replay_of(case.config["file"]), case.config["pace"])

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        ctx.note_cache_policy(self)
        cfg = case.config
        ctx.note_workload(data="random (incompressible)" if not cfg["zeros"] else
                          f"random with {cfg['zeros']:.0%} of each 4 KiB block zeros")
        r = replay_of(cfg["file"])
        # the capture's own account, said before any of the replay's numbers (report, decide)
        ctx.note_workload(capture=capture_account(r))
        seed = ctx.seed("replay", cfg["seed"])
        _, writes = r.data_bytes()
        deadline = deadline_for(r.duration, 0, sum(e.size for e in r.init) + writes,
                                ctx.unit_timeout)
        out_file, _ = ctx.artifact("outcome.json")
        with self.mounted(ctx, case) as (path, inst):
            root = Path(path) / "replay"
            root.mkdir()
            make_initial_state(root, r.init, seed, cfg["zeros"])
            run(["sync", "-f", str(root)])
            if inst is not None:
                inst.cold_cache()
            before = snapshot_paths(root)
            acct = DeviceAccount(inst.devices) if inst is not None else None
            p = run([sys.executable, "-m", "fslab.workloads.support.replayer", cfg["file"],
                     str(root), str(seed), "1" if cfg["pace"] else "0", str(cfg["zeros"]),
                     str(out_file)],
                    check=False, timeout=deadline)
            if p.returncode != 0:
                raise UnitFailed(f"the replayer failed (exit {p.returncode}): "
                                 f"{(p.stderr.strip().splitlines() or [''])[-1]}")
            devices = acct.measurements(wrote=0) if acct is not None else []
            after = snapshot_paths(root)
        out = outcome_from_json(out_file.read_bytes(), r)
        ms = self._measurements(out, devices)
        diffs = fidelity(r, out, before, after)
        fid_rel = self._write_fidelity(ctx, diffs, out)
        ms.append(self.metrics.measure("fidelity_differences", len(diffs), fid_rel))
        if cfg["pace"]:
            ms.append(self.metrics.measure("pace_lag", out.max_lag_s))
            if out.max_lag_s > max(0.1, 0.1 * r.duration):
                ctx.log(f"  --pace: fell {out.max_lag_s:.3f} s behind the captured schedule "
                        f"on {ctx.spec.label} (this filesystem is slower than the capture's)")
        for line in diffs[:5]:
            ctx.log(f"  fidelity on {ctx.spec.label}: {line}")
        if len(diffs) > 5:
            ctx.log(f"  fidelity on {ctx.spec.label}: {len(diffs) - 5} more differences "
                    f"(fidelity.json)")
        return ms

    def _measurements(self, out, devices) -> list[Measurement]:
        m = self.metrics.measure
        ms = [m("replay_time", out.elapsed_s),
              m("replay_ops_per_s", out.operations / out.elapsed_s if out.elapsed_s else 0.0),
              m("replay_operations", out.operations),
              m("replay_bytes_read", out.bytes_read),
              m("replay_bytes_written", out.bytes_written)]
        # p99s first, syncs first: the run summary shows the first few ranked metrics
        kinds = sorted(out.latencies_ns, key=lambda k: (k not in ("fsync", "fdatasync"), k))
        for q, name in ((0.99, "p99"), (0.5, "p50")):
            for kind in kinds:
                s = sorted(out.latencies_ns[kind])
                ms.append(m(f"op_{kind}_{name}", s[min(len(s) - 1, int(q * len(s)))]))
        devices = [d for d in devices if d.metric != "write_amplification"]
        device_wrote = next((d.value for d in devices if d.metric == "device_write_bytes"), None)
        # only when both wrote: writes left dirty at the end never reach the device, and a
        # ratio of nothing (0.00×) would read as measured
        if out.bytes_written and device_wrote:
            ms.append(m("write_amplification", device_wrote / out.bytes_written))
        return ms + devices

    def _write_fidelity(self, ctx, diffs: list[str], out) -> str:
        """fidelity.json in the unit's directory; its stored relative path."""
        import orjson
        path, rel = ctx.artifact("fidelity.json")
        path.write_bytes(orjson.dumps({"differences": diffs, "issued": out.issued},
                                      option=orjson.OPT_INDENT_2))
        return rel


def capture_account(r: Replay) -> dict:
    """What the capture left out, for the run's environment: its lines (said first where
    the replay's numbers are), the losses above LOSS_SHARE (said in the answer line) and
    the account itself (the JSON report's)."""
    reads, writes = r.data_bytes()
    syncs = sum(n for k, n in r.counts().items() if k in SYNC_KINDS)
    return {"lines": r.account.lines(reads + writes, syncs),
            "lost": r.account.lost(reads + writes, syncs),
            "account": r.account.to_dict()}


def fidelity(r: Replay, out, before: dict, after: dict) -> list[str]:
    """What the replay did differently from the capture, one line each (empty: faithful):
    operations issued per kind, bytes read and written, files created and removed, and each
    operation whose outcome differed."""
    lines = []
    want = {k: n for k, n in r.counts().items() if k not in ("spawn", "wait")}
    for k in sorted(set(want) | set(out.issued)):
        if want.get(k, 0) != out.issued.get(k, 0):
            lines.append(f"{k}: {out.issued.get(k, 0)} issued, {want.get(k, 0)} captured")
    reads, writes = r.data_bytes()
    if out.bytes_read != reads:
        lines.append(f"bytes read: {out.bytes_read} here, {reads} when captured")
    if out.bytes_written != writes:
        lines.append(f"bytes written: {out.bytes_written} here, {writes} when captured")
    created, removed = len(set(after) - set(before)), len(set(before) - set(after))
    for what, got, meta in (("created", created, "created"), ("removed", removed, "removed")):
        if meta in r.meta and got != r.meta[meta]:
            lines.append(f"files {what}: {got} here, {r.meta[meta]} when captured")
    lines += [d.line() for d in out.differences]
    return lines
