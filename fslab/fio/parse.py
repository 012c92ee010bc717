"""The one fio JSON parser: used by the live fio suite and by `fslab import`.

Two steps, kept apart so each can fail with its own clear reason:
  load_fio_output(bytes)  -> the fio document (a dict), tolerating text around it
  job_measurements(doc)   -> one JobResult per job entry, values in explicit units

Units are normalised here once, so nothing downstream guesses:
  fio 3.x  *_ns latencies are ns;  fio 2.x slat/clat/lat are usec  -> ns
  "bw" is KiB/s in every version;  "bw_bytes" (3.2+) is bytes/s     -> bytes/s
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from fslab.errors import FslabError
from fslab.fio.clones import merge_clones
from fslab.metrics import Catalogue
from fslab.metrics.declared import DIRECTIONS, FIO_JOB, RW_DIRECTIONS
from fslab.records import Measurement

# what fio says of a job, as the catalogue declares it (units and directions live there)
JOB = Catalogue(FIO_JOB)

PERCENTILES = {"50.000000": "p50", "99.000000": "p99", "99.900000": "p99.9"}
_AGGREGATE_JOBNAME = "All clients"
# a fio document's opening: '{' then (after blanks) a quoted key
_DOC_START = re.compile(r'\{\s*"')


class FioParseError(FslabError):
    """fio output that cannot be read; the message names the source and the reason."""


@dataclass
class JobResult:
    job_name: str
    hostname: str | None          # client/server mode: the fio server this entry came from
    error: int                    # the job's own "error" field (errno), 0 = fine
    measurements: list[Measurement]
    groupid: int = 0
    aggregate: bool = False       # the "All clients" entry of client/server output
    options: dict[str, Any] = field(default_factory=dict)   # job options (+ global ones)


# -- step 1: find the fio document -------------------------------------------------

def load_fio_output(data: bytes | str, source: str = "?") -> dict:
    """The fio JSON document in `data`, which may have fio's text output around it.

    Raises FioParseError("<source>: <one specific reason>").
    """
    try:
        doc = orjson.loads(data)          # the fast path: a clean document
    except orjson.JSONDecodeError:
        doc = None
    if doc is not None:
        if _is_fio_doc(doc):
            return doc
        raise FioParseError(f"{source}: valid JSON but not fio output "
                            "(no 'jobs' or 'client_stats' list)")
    text = data.decode("utf-8", "replace") if isinstance(data, (bytes, bytearray)) else data
    found = _between_braces(text)
    if found is not None:
        return found
    found, first_error = _scan(text)
    if found is not None:
        return found
    raise FioParseError(f"{source}: {_why_not(text, first_error)}")


def _is_fio_doc(doc: Any) -> bool:
    return isinstance(doc, dict) and (isinstance(doc.get("jobs"), list)
                                      or isinstance(doc.get("client_stats"), list))


def _between_braces(text: str) -> dict | None:
    """The fast path for text around one document: from the first '{"' to the last '}',
    when that span is exactly one fio document (what _scan would find, at orjson speed)."""
    m = _DOC_START.search(text)
    end = text.rfind("}") + 1
    if m is None or end <= m.start():
        return None
    try:
        doc = orjson.loads(text[m.start():end])
    except orjson.JSONDecodeError:
        return None
    return doc if _is_fio_doc(doc) else None


def _scan(text: str) -> tuple[dict | None, json.JSONDecodeError | None]:
    """The first fio document embedded in text (banners, progress lines, shell prompts,
    or a second document around it). Python's decoder keeps the last of duplicate keys,
    as fio 2.x-3.7 outputs need. Also returns the first decode error, to explain failure."""
    decoder = json.JSONDecoder()
    first_error = None
    pos = 0
    while (m := _DOC_START.search(text, pos)) is not None:
        try:
            doc, end = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError as e:
            first_error = first_error or e
            pos = m.start() + 1
            continue
        if _is_fio_doc(doc):
            return doc, None
        pos = end                         # a complete non-fio object: skip all of it
    return None, first_error


def _why_not(text: str, error: json.JSONDecodeError | None) -> str:
    stripped = text.strip()
    if not stripped:
        return "empty (fio wrote nothing)"
    if error is None:
        fio_lines = [ln.strip() for ln in stripped.splitlines() if ln.startswith("fio:")]
        if "\x00" in stripped or stripped.count("\ufffd") > len(stripped) // 20:
            return f"not fio output: binary data ({len(text)} characters)"
        said = fio_lines[0] if fio_lines else stripped.splitlines()[0][:120]
        # escaped: whatever the file holds never reaches the terminal as control bytes
        return f"no JSON document in it; fio printed: {ascii(said)}"
    if error.pos >= len(text.rstrip()):
        return (f"the JSON is truncated: the output ends (after {len(text)} characters, "
                f"line {error.lineno}) before the document is closed")
    return f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"


# -- step 2: measurements per job ----------------------------------------------------

_SERVER = "\0fslab-server"   # a key fio never writes

def job_measurements(doc: dict) -> list[JobResult]:
    """One JobResult per entry of `jobs` (or `client_stats` in client/server mode)."""
    client_mode = "jobs" not in doc
    entries = doc.get("jobs") if not client_mode else doc.get("client_stats")
    global_opts = _global_options(doc.get("global options"))
    hosts = _host_labels(entries or []) if client_mode else {}
    # a job's clones (numjobs, no group_reporting) are one result, per fio server
    # (fslab/fio/clones.py); each entry carries its server label through the merge
    entries = merge_clones([{**e, _SERVER: hosts.get(id(e))} for e in entries or []],
                           key=lambda e: (e.get("jobname"), e.get("groupid"), e[_SERVER]))
    results = []
    for job in entries or []:
        name = str(job.get("jobname", "?")).strip()
        aggregate = client_mode and name == _AGGREGATE_JOBNAME
        options = {**global_opts, **(job.get("job options") or {})}
        results.append(JobResult(
            job_name=name,
            # fio stamps the last client's hostname on the aggregate: it belongs to no host
            hostname=None if aggregate else job[_SERVER],
            error=int(job.get("error", 0) or 0),
            measurements=_job_values(job, options),
            groupid=int(job.get("groupid", 0) or 0),
            aggregate=aggregate,
            options=options,
        ))
    return results


def _host_labels(entries: list[dict]) -> dict[int, str]:
    """Each client entry's fio server: its hostname, plus ':port' where one host ran
    several servers (e.g. two on 127.0.0.1), so distinct servers stay distinct."""
    ports: dict[str, set] = {}
    for e in entries:
        ports.setdefault(str(e.get("hostname")), set()).add(e.get("port"))
    labels = {}
    for e in entries:
        host = str(e.get("hostname"))
        if e.get("hostname") is not None:
            labels[id(e)] = f"{host}:{e.get('port')}" if len(ports[host]) > 1 else host
    return labels


def _global_options(opts: Any) -> dict:
    # fio >= 3.39 with several servers writes a list of per-server option objects
    if isinstance(opts, list):
        merged: dict = {}
        for o in opts:
            if isinstance(o, dict):
                merged.update({k: v for k, v in o.items() if k not in ("hostname", "port")})
        return merged
    return dict(opts) if isinstance(opts, dict) else {}


def _declared_directions(options: dict) -> set[str] | None:
    """Directions the job was asked to do (None: options do not say, e.g. fio 2.1)."""
    rw = options.get("rw", options.get("readwrite"))
    if rw is None:
        return None
    dirs = set(RW_DIRECTIONS.get(str(rw).split(":")[0], ()))
    if "read" in dirs and "write" in dirs:
        mix = options.get("rwmixread")
        if mix is None and options.get("rwmixwrite") is not None:
            mix = 100 - int(options["rwmixwrite"])
        if mix is not None and int(mix) in (0, 100):
            dirs.discard("write" if int(mix) == 100 else "read")
    return dirs or None


def declared_io(options: dict) -> dict[str, Any]:
    """What a job says it does, from its options as fio ran them (rw=, the read share of a
    read/write mix, how often it fsyncs or fdatasyncs): stored in a job file's record params,
    so its answer follows what it does rather than its name. {} when rw= is not given."""
    rw = options.get("rw", options.get("readwrite"))
    if rw is None:
        return {}
    pattern = str(rw).split(":")[0].strip()
    out: dict[str, Any] = {"rw": pattern}
    if {"read", "write"} <= RW_DIRECTIONS.get(pattern, set()):
        mix = _whole(options.get("rwmixread"))
        if mix is None and _whole(options.get("rwmixwrite")) is not None:
            mix = 100 - _whole(options["rwmixwrite"])
        out["rwmixread"] = 50 if mix is None else max(0, min(100, mix))   # fio's default: 50
    for key in ("fsync", "fdatasync"):
        every = _whole(options.get(key))
        if every:
            out[key] = every
    return out


def declared_group_io(members: list[dict]) -> dict[str, Any]:
    """What a group of jobs that fio reported as one entry (group_reporting) does together:
    every member's directions, the read share weighted by each member's numjobs, and the
    most frequent sync any member asks for (a group of [dbwrite] rw=randwrite fsync=1 and
    [dbread] rw=randread is a random read/write mix half reads that fsyncs every write)."""
    each = [(declared_io(m), max(1, _whole(m.get("numjobs")) or 1)) for m in members]
    each = [(d, n) for d, n in each if d]
    if not each:
        return {}
    if len(each) == 1:
        return each[0][0]
    dirs = set().union(*(RW_DIRECTIONS.get(d["rw"], set()) for d, _ in each))
    rand = any(d["rw"].startswith("rand") for d, _ in each)
    if {"read", "write"} <= dirs:
        out: dict[str, Any] = {"rw": "randrw" if rand else "rw"}

        def read_share(d):
            ds = RW_DIRECTIONS.get(d["rw"], set())
            return d.get("rwmixread", 50) if {"read", "write"} <= ds else 100 if "read" in ds else 0
        out["rwmixread"] = round(sum(read_share(d) * n for d, n in each) / sum(n for _, n in each))
    else:
        out = {"rw": each[0][0]["rw"]}
    for key in ("fsync", "fdatasync"):
        every = [d[key] for d, _ in each if d.get(key)]
        if every:
            out[key] = min(every)
    return out


def _whole(value: Any) -> int | None:
    try:
        return int(str(value).strip().rstrip("%"))
    except (TypeError, ValueError):
        return None


def _ios(d: dict) -> float:
    """How much I/O a direction did (total_ios, else bytes, else iops: by fio version)."""
    for key in ("total_ios", "io_bytes", "io_kbytes"):
        if key in d:
            return float(d[key] or 0)
    return float(d.get("iops", 0) or 0)


# fio times a job in whole milliseconds: a direction done in under this many is a rate off by
# more than 1 % (fio's own filestat example: 500 stats in 2 ms, "250,000 IOPS" on every
# filesystem). Its IOPS and bandwidth are kept, unranked, with the run time; latencies rank.
SHORT_RUN_MS = 100


def _job_values(job: dict, options: dict) -> list[Measurement]:
    out: list[Measurement] = []
    declared = _declared_directions(options)
    for direction in DIRECTIONS:
        d = job.get(direction)
        if not isinstance(d, dict):
            continue
        did_io = _ios(d) > 0
        # keep an honest 0 when the job was asked for this direction and got nothing
        if not did_io and not (declared and direction in declared):
            continue
        runtime_ms = float(d.get("runtime", 0) or 0)
        short = did_io and 0 < runtime_ms < SHORT_RUN_MS
        out.append(JOB.measure(f"{direction}_iops", float(d.get("iops", 0) or 0), ranked=not short))
        out.append(JOB.measure(f"{direction}_bw", _bytes_per_s(d), ranked=not short))
        if short:
            out.append(JOB.measure(f"{direction}_runtime", runtime_ms / 1000))
        if did_io:
            out.extend(_latencies(direction, d))
    # fsync/fdatasync latency: fio counts only fsyncs in total_ios (an fdatasync=1 job says
    # 0 beside 2,000 timed fdatasyncs), so the samples decide (N, or total_ios before 3.18)
    sync = job.get("sync")
    if isinstance(sync, dict) and (float(sync.get("total_ios", 0) or 0) > 0
                                   or int((sync.get("lat_ns") or {}).get("N", 0) or 0) > 0):
        out.extend(_latencies("sync", sync))
    # fio's own threads' CPU % of a fixed-time job: described, never ranked (more work
    # in the same time costs more; a FUSE daemon's work is missing from it altogether)
    for key in ("usr_cpu", "sys_cpu"):
        if key in job:
            out.append(JOB.measure(key, float(job[key])))
    out.extend(_steady_state(job.get("steadystate")))
    out.append(JOB.measure("error", float(job.get("error", 0) or 0)))
    if job.get("clones"):   # merged clones: how many, and the per-clone mean (fio/clones.py)
        out.append(JOB.measure("clones", float(job["clones"])))
        for direction, per in (job.get("per_job") or {}).items():
            if any(m.metric == f"{direction}_iops" for m in out):
                out.append(JOB.measure(f"{direction}_iops_per_job", per["iops"]))
                out.append(JOB.measure(f"{direction}_bw_per_job", per["bw_bytes"]))
    return out


def _bytes_per_s(d: dict) -> float:
    if "bw_bytes" in d:
        return float(d["bw_bytes"])
    return float(d.get("bw", 0) or 0) * 1024.0     # "bw" is KiB/s in every fio version


def _latencies(prefix: str, d: dict) -> list[Measurement]:
    """clat/lat mean, min, max and percentiles in ns, from *_ns (3.x) or usec keys (2.x)."""
    out = []
    for kind in ("clat", "lat"):
        stats, scale = d.get(f"{kind}_ns"), 1.0
        if stats is None:
            stats, scale = d.get(kind), 1000.0          # fio 2.x: usec
        if not isinstance(stats, dict) or not _has_samples(stats):
            continue
        for stat in ("mean", "min", "max"):
            if stat in stats:
                out.append(JOB.measure(f"{prefix}_{kind}_{stat}", float(stats[stat]) * scale))
        pct = stats.get("percentile")
        if isinstance(pct, dict):
            for key, label in PERCENTILES.items():
                if key in pct:
                    out.append(JOB.measure(f"{prefix}_{kind}_{label}", float(pct[key]) * scale))
    return out


def _has_samples(stats: dict) -> bool:
    # N (3.18+) says it; before that all-zero stats mean latency was not collected
    # (e.g. gtod_reduce=1): a 0 ns latency would be a lie
    if "N" in stats:
        return int(stats["N"] or 0) > 0
    return any(float(stats.get(k, 0) or 0) > 0 for k in ("mean", "max"))


# SNIA PTS's steady state: over the measurement window every value within 20% of the
# window's mean (fio's `steadystate=iops:20%` stops the job on it), and the best linear
# fit's excursion across the window within 10% of that mean (checked here from fio's data)
SNIA_SPREAD_PCT = 20.0
SNIA_SLOPE_PCT = 10.0


def steady_state_of(ss: Any) -> tuple[bool, float, float] | None:
    """(reached, spread %, slope excursion %) of fio's steadystate entry: spread is the
    largest deviation from the window's mean, the excursion the fitted line's rise or fall
    across the window, both in % of the mean; None without a full window of data."""
    if not isinstance(ss, dict):
        return None
    data = ss.get("data") or {}
    crit = str(ss.get("ss", ""))
    values = [float(v) for v in (data.get("bw" if crit.startswith("bw") else "iops") or [])]
    if len(values) < 2 or not any(values):
        return None
    n = len(values)
    mean = sum(values) / n
    spread = max(abs(v - mean) for v in values) / mean * 100
    xm = (n - 1) / 2
    slope = sum((x - xm) * (v - mean) for x, v in enumerate(values)) / \
        sum((x - xm) ** 2 for x in range(n))
    excursion = abs(slope) * (n - 1) / mean * 100
    reached = (bool(int(ss.get("attained", 0) or 0)) and spread <= SNIA_SPREAD_PCT
               and excursion <= SNIA_SLOPE_PCT)
    return reached, spread, excursion


def _steady_state(ss: Any) -> list[Measurement]:
    got = steady_state_of(ss)
    if got is None:
        return []
    reached, spread, excursion = got
    return [JOB.measure("steady_state_reached", float(reached)),
            JOB.measure("steady_state_spread", spread),
            JOB.measure("steady_state_slope", excursion)]
