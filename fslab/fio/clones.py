"""One entry per fio job, however many clones it ran (numjobs without group_reporting).

With `numjobs=N` and no `group_reporting`, fio reports each clone as its own entry with
the job's name. Those are not repetitions: they ran at the same time and shared the
device, so the job's result is their sum. Treated as separate values they would be
pooled like iterations (N values per round, pairing lost) or split into N arbitrary
"cases" (clone 0 on ext4 has nothing to do with clone 0 on xfs). Here they are merged
per job (and per fio server in client/server mode):

- IOPS, bandwidth, bytes and I/O counts: summed; runtime: the longest clone's.
- Latency mean: weighted by each clone's sample count; min/max: the extremes.
- Latency percentiles: exact from fio's json+ histogram bins when every clone has them
  (fslab runs fio with json+), else the sample-weighted mean of the clones' percentiles
  (an approximation, marked in the merged entry as `percentiles_approximate`).
- usr/sys CPU %: summed (each clone's share of one CPU), error: the first non-zero.

The merged entry keeps `clones` (how many) and `per_job` (the clones' mean IOPS and
bandwidth per direction: what a per-clone table, like study S2's notebook, shows).
"""
from __future__ import annotations

import copy
from collections import Counter

DIRECTIONS = ("read", "write", "trim", "sync")
SUMMED = ("iops", "bw", "bw_bytes", "io_bytes", "io_kbytes", "total_ios", "short_ios",
          "drop_ios")
LATENCIES = ("clat_ns", "lat_ns", "slat_ns", "clat", "lat", "slat")
# fio's per-job counters: its threads' CPU % (usr_cpu, sys_cpu), context switches, faults
COUNTERS = ("usr_cpu", "sys_cpu", "ctx", "majf", "minf")


def merge_clones(entries: list[dict], key=lambda e: (e.get("jobname"), e.get("groupid"))) -> list[dict]:
    """The entries with every set of clones (same `key`) merged into one, in first-seen order."""
    groups: dict[object, list[dict]] = {}
    for e in entries:
        groups.setdefault(key(e), []).append(e)
    return [g[0] if len(g) == 1 else merged(g) for g in groups.values()]


def merged(clones: list[dict]) -> dict:
    out = copy.deepcopy(clones[0])
    for d in DIRECTIONS:
        parts = [c.get(d) for c in clones if isinstance(c.get(d), dict)]
        if parts:
            out[d] = _direction(parts)
    for k in COUNTERS:
        if any(k in c for c in clones):
            out[k] = sum(float(c.get(k, 0) or 0) for c in clones)
    out["error"] = next((c.get("error") for c in clones if c.get("error")), 0)
    out["clones"] = len(clones)
    out["per_job"] = {d: {"iops": out[d].get("iops", 0) / len(clones),
                          "bw_bytes": _bw_bytes(out[d]) / len(clones)}
                      for d in DIRECTIONS if isinstance(out.get(d), dict)}
    return out


def _bw_bytes(d: dict) -> float:
    return float(d["bw_bytes"]) if "bw_bytes" in d else float(d.get("bw", 0) or 0) * 1024.0


def _direction(parts: list[dict]) -> dict:
    out = copy.deepcopy(parts[0])
    for k in SUMMED:
        if any(k in p for p in parts):
            out[k] = sum(float(p.get(k, 0) or 0) for p in parts)
    if any("runtime" in p for p in parts):
        out["runtime"] = max(float(p.get("runtime", 0) or 0) for p in parts)
    for k in LATENCIES:
        stats = [p.get(k) for p in parts if isinstance(p.get(k), dict)]
        if stats:
            out[k] = _latency(stats, [_samples(p, s) for p, s in zip(parts, stats)])
    return out


def _samples(direction: dict, stats: dict) -> float:
    if "N" in stats:
        return float(stats["N"] or 0)
    return float(direction.get("total_ios", 0) or 0)


def _latency(stats: list[dict], weights: list[float]) -> dict:
    out = copy.deepcopy(stats[0])
    total = sum(weights)
    live = [(s, w) for s, w in zip(stats, weights) if w > 0] or list(zip(stats, weights))
    if "N" in out:
        out["N"] = int(total)
    if "min" in out:
        out["min"] = min(float(s.get("min", 0) or 0) for s, _ in live)
    if "max" in out:
        out["max"] = max(float(s.get("max", 0) or 0) for s, _ in live)
    if "mean" in out:
        out["mean"] = (sum(float(s.get("mean", 0) or 0) * w for s, w in live) / total
                       if total else float(out["mean"]))
    if "stddev" in out:   # the pooled standard deviation (within- and between-clone spread)
        mean = out["mean"]
        var = sum(w * (float(s.get("stddev", 0) or 0) ** 2 + (float(s.get("mean", 0) or 0) - mean) ** 2)
                  for s, w in live)
        out["stddev"] = (var / total) ** 0.5 if total else float(out["stddev"])
    pct = out.get("percentile")
    if isinstance(pct, dict):
        bins = [s.get("bins") for s, _ in live]
        if all(isinstance(b, dict) and b for b in bins):
            hist: Counter = Counter()
            for b in bins:
                hist.update({int(v): int(n) for v, n in b.items()})
            out["bins"] = {str(v): n for v, n in sorted(hist.items())}
            out["percentile"] = {k: _percentile(hist, float(k)) for k in pct}
        else:
            out["percentile"] = {k: sum(float((s.get("percentile") or {}).get(k, 0) or 0) * w
                                        for s, w in live) / total if total else v
                                 for k, v in pct.items()}
            out["percentiles_approximate"] = True
    return out


def _percentile(hist: Counter, p: float) -> int:
    """The smallest binned latency with at least p% of the samples at or below it."""
    total = sum(hist.values())
    need = total * p / 100.0
    seen = 0
    for value in sorted(hist):
        seen += hist[value]
        if seen >= need:
            return value
    return max(hist) if hist else 0


def consecutive(entries: list[dict]) -> dict:
    """One entry for a job that fio ran as consecutive slices (fslab's interleaved blocks,
    fslab/workloads/sliced.py): unlike clones, the slices did not run at the same time, so
    the job's rates are its I/O over the slices' time together (not summed rates), its
    latencies pooled from every slice's samples (exact percentiles from json+ bins), its
    CPU % weighted by each slice's runtime. Each entry is one slice, its clones already
    merged."""
    out = copy.deepcopy(entries[0])
    for d in DIRECTIONS:
        parts = [e.get(d) for e in entries if isinstance(e.get(d), dict)]
        if parts:
            out[d] = _in_sequence(parts)
    runtimes = [float(e.get("job_runtime", 0) or 0) for e in entries]
    out["job_runtime"] = sum(runtimes)
    for k in COUNTERS:
        if not any(k in e for e in entries):
            continue
        if k.endswith("_cpu"):   # a % of each slice's time: weighted by it
            out[k] = (sum(float(e.get(k, 0) or 0) * r for e, r in zip(entries, runtimes))
                      / sum(runtimes)) if sum(runtimes) > 0 else float(entries[0].get(k, 0) or 0)
        else:
            out[k] = sum(float(e.get(k, 0) or 0) for e in entries)
    out["error"] = next((e.get("error") for e in entries if e.get("error")), 0)
    out["slices"] = len(entries)
    return out


def _in_sequence(parts: list[dict]) -> dict:
    out = copy.deepcopy(parts[0])
    for k in ("io_bytes", "io_kbytes", "total_ios", "short_ios", "drop_ios"):
        if any(k in p for p in parts):
            out[k] = sum(float(p.get(k, 0) or 0) for p in parts)
    runtime_ms = sum(float(p.get("runtime", 0) or 0) for p in parts)
    out["runtime"] = runtime_ms
    seconds = runtime_ms / 1000.0
    if seconds > 0:
        ios = out.get("total_ios", 0)
        done = out.get("io_bytes", float(out.get("io_kbytes", 0) or 0) * 1024.0)
        out["iops"] = float(ios) / seconds
        out["bw_bytes"] = float(done) / seconds
        out["bw"] = out["bw_bytes"] / 1024.0
    for k in LATENCIES:
        stats = [p.get(k) for p in parts if isinstance(p.get(k), dict)]
        if stats:
            out[k] = _latency(stats, [_samples(p, s) for p, s in zip(parts, stats)])
    return out
