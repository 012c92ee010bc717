"""The answer first: one line per workload (its main metric in tiers, plus p99 latency),
with a warning where the device saw only a fraction of the bytes (served from memory)."""
from __future__ import annotations

from typing import Callable, Iterable

import math

import orjson
import pandas as pd

from fslab.analysis import Analysis
from fslab.analysis.carryover import CHECKABLE, carryover, carryover_text, unchecked_text
from fslab.analysis.groups import FS_FACTOR
from fslab.analysis.significance import ALPHA
from fslab.metrics import answer_metrics
from fslab.metrics.declared import DEVICE_SHARES
from fslab.report.cpubound import cpu_bound, cpu_text
from fslab.report.tables import workload_label
from fslab.store.environment import RunEnvironment
from fslab.report.sharpness import SHARPNESS_NOTE, could_see, sharpen
from fslab.report.verdicts import LETTERS_NOTE, ranking_line, says_why

MEMORY_SHARE = 0.5   # below this share of fio's bytes on the device, a row is memory


def memory_bound(records: pd.DataFrame) -> dict[tuple, dict]:
    """(suite, case, params) -> {fs: share} for units whose device saw < half of fio's
    bytes (device_read_share for reads, write_amplification for writes)."""
    if records.empty or "metric" not in records:
        return {}
    r = records[records["metric"].isin(DEVICE_SHARES)]
    if r.empty:
        return {}
    med = r.groupby(["suite", "case", "params", "fs", "metric"], dropna=False)["value"].median()
    out: dict[tuple, dict] = {}
    for (suite, case, params, fs, metric), share in med.items():
        if share < MEMORY_SHARE:
            d = out.setdefault((suite, case, params), {})
            d[fs] = min(share, d.get(fs, math.inf))
    return out


# a space, share or count answer is read after a commit: memory serving the unit's I/O
# (dedup's read phase, a syncfs zfs-fuse ignores) does not make it a memory number
NOT_SPEEDS = {"B", "%", "ratio", "fraction", "count", "bool", "code"}


def memory_applies(unit: str) -> bool:
    return unit not in NOT_SPEEDS


def memory_text(shares: dict) -> str:
    return "served from memory: " + ", ".join(
        f"{fs} (device saw {share:.0%} of the bytes)" for fs, share in sorted(shares.items()))


def headline(a: Analysis, records: pd.DataFrame | None = None,
             environments: Iterable[RunEnvironment] = ()) -> list[dict]:
    """One entry per workload: the tier sentence of its main metric (and p99 latency);
    a replayed capture's entry carries what the capture left out ("capture")."""
    captured = captures_of(environments)
    if a.tiers.empty or tuple(a.factor) != tuple(FS_FACTOR):
        return []
    sharpen(a)
    mem = memory_bound(records) if records is not None else {}
    busy = cpu_bound(records) if records is not None else {}
    answered: list[tuple] = []
    wkeys = [k for k in a.keys if k not in ("metric", "unit")]
    groups = [(dict(zip(wkeys, wkey if isinstance(wkey, tuple) else (wkey,))), g)
              for wkey, g in a.tiers.groupby(wkeys, sort=True, dropna=False)]
    last = _last_steps([ident for ident, _ in groups])
    out = []
    for ident, g in groups:
        if not last(ident):
            continue
        # which metric answers a workload is the catalogue's (fslab/metrics/answer.py)
        wanted = answer_metrics(ident.get("suite"), str(ident.get("case", "")), ident.get("params"),
                                set(g["metric"]))
        if not wanted:
            continue
        lines = [g[g["metric"] == m].iloc[0] for m in wanted]
        answered += [tuple(r[k] for k in a.keys) for r in lines]
        memo = mem.get((ident.get("suite"), ident.get("case"), ident.get("params"))) \
            if any(memory_applies(r["unit"]) for r in lines) else None
        out.append({"workload": workload_label({**ident, "metric": "", "unit": ""}),
                    "metrics": [r["metric"] for r in lines],
                    "rankings": [r.to_dict() for r in lines],
                    "lines": [ranking_line(r) for r in lines],
                    "memory_bound": ({"shares": memo, "why": memory_text(memo)} if memo else None),
                    "capture": captured.get(f"{ident.get('suite')}:{ident.get('case')}"),
                    "cpu_bound": ({"units": cpu, "why": cpu_text(cpu)}
                                  if (cpu := busy.get((ident.get("suite"), ident.get("case"),
                                                       ident.get("params")))) else None)})
    # the tests' assumption, checked on this run's own answer metrics where it can be
    carried = carryover(a.data, a.keys, answered)
    rounds = carried.rounds if carried.series else \
        int(a.data["iteration"].nunique()) if "iteration" in a.data else 0
    notes = ([carryover_text(carried)] if carried.violated else
             [unchecked_text(rounds)] if rounds < CHECKABLE and out else [])
    for e in out:
        e["run_notes"] = list(notes)
    return out


def captures_of(environments: Iterable[RunEnvironment]) -> dict[str, dict]:
    """suite:case -> what a replayed capture left out (fslab/workloads/replay.py)."""
    out: dict[str, dict] = {}
    for env in environments:
        for key, w in env.workloads.items():
            if isinstance(w.get("capture"), dict):
                out.setdefault(key, w["capture"])
    return out


def with_capture(lines: list[str], verdict: str, captures: dict[str, dict]) -> list[str]:
    """A decision's lines on a replayed capture: what the capture left out first, and a
    loss above the stated share in its verdict line."""
    first = [f"{key.split(':', 1)[1]} — capture: {line}"
             for key, c in sorted(captures.items()) for line in c["lines"]]
    lost = [f"{key.split(':', 1)[1]}: {p}" for key, c in sorted(captures.items())
            for p in c.get("lost") or []]
    said = [line + (f"  ⚠ replay of a partial capture: {'; '.join(lost)}"
                    if lost and line == verdict else "") for line in lines]
    return first + said


def _series(ident: dict) -> tuple[tuple, float | None]:
    """(the workload without its step, the step) for a workload measured in steps (aging)."""
    try:
        params = orjson.loads(ident.get("params") or "{}")
    except orjson.JSONDecodeError:
        params = {}
    step = params.pop("step", None) if isinstance(params, dict) else None
    rest = orjson.dumps(params, option=orjson.OPT_SORT_KEYS) if isinstance(params, dict) else b""
    key = tuple(sorted((k, str(v)) for k, v in ident.items() if k != "params")) + (rest,)
    return key, (float(step) if isinstance(step, (int, float)) else None)


def _last_steps(idents: list[dict]) -> Callable[[dict], bool]:
    """A test for the workloads the answer shows: of a series of steps (aging after 0, 25, ...
    pulls), only the last: the earlier steps are the way there, in the details."""
    final: dict[tuple, float] = {}
    for ident in idents:
        key, step = _series(ident)
        if step is not None:
            final[key] = max(step, final.get(key, step))

    def shown(ident: dict) -> bool:
        key, step = _series(ident)
        return step is None or step == final[key]
    return shown


def headline_text(entries: list[dict]) -> list[str]:
    """Plain lines: 'randwrite — write IOPS: xfs ≈ ext4 ≫ btrfs (0.05×); p99 ...'. A reason
    for '~' that repeats (n too small for any test) is said once, as a numbered note, and so
    is what letters mean when a ranking needs them."""
    counts: dict[str, int] = {}
    for e in entries:
        for t in e["rankings"]:
            if t["why"] and says_why(t):
                counts[t["why"]] = counts.get(t["why"], 0) + 1
    notes: list[str] = []

    def note(text: str) -> str:
        if text not in notes:
            notes.append(text)
        return f"[{notes.index(text) + 1}]"
    lines = []
    for e in entries:
        capture = e.get("capture")
        if capture:   # a replay's numbers are only as whole as its capture: said first
            lines += [f"{e['workload']} — capture: {line}" for line in capture["lines"]]
        said = []
        for t in e["rankings"]:
            said.append(ranking_line(t, note(t["why"]) if counts.get(t["why"], 0) > 1 else None))
            if t["display"] == "letters":
                said[-1] += f" {note(LETTERS_NOTE)}"
        text = f"{e['workload']} — " + "; ".join(said)
        if e["memory_bound"]:
            text += f"  ⚠ {e['memory_bound']['why']}"
        if capture and capture.get("lost"):
            text += f"  ⚠ replay of a partial capture: {'; '.join(capture['lost'])}"
        if e.get("cpu_bound"):
            text += f"  ⚠ {e['cpu_bound']['why']}"
        lines.append(text)
    # notes of the whole run, not of a line: unnumbered, after the numbered ones
    run_notes = list(dict.fromkeys(t for e in entries for t in e.get("run_notes") or []))
    sharp = [f"{e['workload']} {could_see(e['rankings'][0].get('mde')).removeprefix('could see ')}"
             for e in entries if e["rankings"] and could_see(e["rankings"][0].get("mde"))]
    if sharp:       # every run says how sharp it was, separated or not
        run_notes.append(f"{SHARPNESS_NOTE}. Here, of each workload's first metric: {'; '.join(sharp)}")
    ranked = sum(len(e["rankings"]) for e in entries)
    if ranked:
        run_notes.append(scope_text(ranked))
    return lines + [f"[{i}] {why}" for i, why in enumerate(notes, 1)] + run_notes


def scope_text(lines: int) -> str:
    """What the 5% covers: Holm corrects the pairs of one line (a workload's metric), not
    the answer's lines together; identical filesystems through six workloads got some
    false '≫' in 24-26% of simulated runs (issue 47)."""
    if lines == 1:
        return f"5%: the line's '≫' is a false separation with a chance of at most {ALPHA:.0%} (Holm over its pairs)"
    return (f"5% per line: each line's '≫' is a false separation with a chance of at most "
            f"{ALPHA:.0%} (Holm over that line's pairs, not over the answer); across these "
            f"{lines} lines, identical filesystems would get at least one false '≫' in about "
            f"{1 - (1 - ALPHA) ** lines:.0%} of runs (were the lines independent; at most "
            f"{min(1.0, ALPHA * lines):.0%})")
