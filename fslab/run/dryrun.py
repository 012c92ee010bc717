"""`fslab run --dry-run`: what a plan would run, without touching a disk.

Every case of every suite on every filesystem, with its exact options (fio's job
options, task parameters), the iterations, and an estimated duration. The
estimate of a unit is the median of the same unit in earlier runs of this
results store at the same profile when there is one (it includes mkfs, mount
and teardown as they took here), else the suite's own guess from the options
(fio: runtime + ramp + layout), else unknown, said as such.
"""
from __future__ import annotations

import json
import statistics
from typing import Any

from fslab.records import canonical_params
from fslab.filesystems import get as driver_get
from fslab.run.schedule import Schedule, too_few_rounds
from fslab.plan.variants import item_text
from fslab.metrics.format import human, number
from fslab.plan import FilesystemSpec
from fslab.report.options import print_table, spec_options
from fslab.report.claims import deviations
from fslab.workloads import scales_a_study
from fslab.workloads.sliced import describe as describe_slices


def outline(plan, store=None, target: str = "loop", schedule=None) -> dict[str, Any]:
    """The plan as a run would expand it (its `schedule`, fslab/run/schedule.py):
    {"cases": [...], "estimate_seconds", ...}."""
    schedule = schedule or Schedule.of(plan)
    pairs, notes = schedule.pairs, schedule.notes
    past = _past_durations(store, plan.run.profile) if store is not None else {}
    unavailable = {}
    for spec in plan.filesystem:
        avail = driver_get(spec.name).available()
        if not avail.ok:
            unavailable[spec.label] = avail.why
    n = plan.iterations
    cases, total, unknown = [], 0.0, 0
    for spec, suite, case in pairs:
        key = (spec.name, spec.variant, suite.name, case.name, canonical_params(case.params))
        design = design_of(plan, suite, case)
        if key in past:
            each, source = past[key], "median of earlier runs here"
        elif design.startswith("interleaved"):
            each, source = suite.estimate_seconds(case, plan.run.slice_ms), "from the options"
        else:
            each, source = suite.estimate_seconds(case), "from the options"
        if each is None:
            unknown += 1
            source = "unknown (no earlier run of it in this store)"
        else:
            total += each * n
        said = suite.describe(case)
        image = suite.image_bytes(case, spec, plan.profile)
        if image is not None:   # as Instance does: never below what the filesystem accepts
            image = max(image, driver_get(spec.name).min_bytes)
        if "fio_options" in said:   # what the cache policy adds when the unit runs
            said["direct_io"] = _direct_io(said["fio_options"], plan)
        cases.append({"filesystem": spec.label, "suite": suite.name, "case": case.name,
                      "params": case.params, **said,
                      "image_bytes": image, "design": design,
                      "seconds_each": None if each is None else round(each, 1),
                      "estimate_from": source})
    page_cache = plan.page_cache
    return {"profile": plan.profile.name, "scaled": scales_a_study(plan),
            "iterations": n, "adaptive": plan.run.adaptive,
            "max_iterations": plan.run.max_iterations if plan.run.adaptive else n,
            "target": target, "page_cache": page_cache,
            "page_cache_means": _cache_sentence(page_cache),
            "filesystems": [f.label for f in plan.filesystem],
            "filesystem_options": [_options_of(f) for f in plan.filesystem],
            "not_available_here": unavailable, "notes": notes,
            "units": len(pairs) * n, "too_few_rounds": too_few_rounds(plan),
            "study_deviations": _study_deviations(plan), "cases": cases,
            "estimate_seconds": round(total, 1), "cases_without_estimate": unknown}


def design_of(plan, suite, case) -> str:
    """How the run measures this case: in words, as the answer's header says it."""
    why = suite.slicing(case)
    if plan.design != "sliced" or why:
        return "one unit per filesystem"
    return describe_slices(case.config, plan.run.slice_ms)


def _study_deviations(plan) -> dict[str, Any] | None:
    """A study plan's declared deviations from its document (fslab/data/claims/sN.toml)."""
    source, items = deviations(plan.run.name or "")
    return {"declared_in": source, "items": items} if items else None


def _options_of(spec) -> dict[str, Any]:
    """A variant's own options as the run will pass them (fslab adds its defaults, e.g.
    ext4's lazy-init -E, ZFS's cachefile=none, when it runs them)."""
    return {"filesystem": spec.label, "name": spec.name, "variant": spec.variant,
            "mkfs_options": list(spec.mkfs_options),
            "mount_options": list(spec.mount_options), "properties": dict(spec.properties),
            "pool_properties": dict(spec.pool_properties), "as_typed": item_text(spec)}


JOB_FILE_IO = ("run as written, whatever the page-cache policy: direct I/O only in jobs that "
               "set direct=1 (or buffered=0), buffered in the others")


def _direct_io(options: dict, plan) -> str:
    if "direct" in options:
        return f"direct={options['direct']} as the plan sets"
    if plan.page_cache == "on":
        return "buffered (page cache on)"
    return "direct=1 where the filesystem accepts O_DIRECT (probed when the unit runs)"


def _cache_sentence(policy: str) -> str:
    if policy == "on":
        return "buffered I/O (page cache on), end_fsync=1 on write jobs unless the job says otherwise"
    return ("direct=1 added to every job fslab writes, on filesystems that accept O_DIRECT "
            "(probed when the unit runs); elsewhere the page cache is dropped between layout "
            "and measurement")


def _past_durations(store, profile: str) -> dict[tuple, float]:
    """(fs, variant, suite, case, params) -> median seconds of its finished units in earlier
    runs at this profile."""
    durations: dict[tuple, list[float]] = {}
    for run in store.runs():
        if run.get("profile") != profile:
            continue
        for u in store.units(run["run_id"]):
            if u["status"] == "done" and u.get("started") and u.get("finished"):
                key = (u["fs"], u["variant"], u["suite"], u["case"], u["params"])
                durations.setdefault(key, []).append(u["finished"] - u["started"])
    return {k: statistics.median(v) for k, v in durations.items()}


def print_outline(o: dict[str, Any], console) -> None:
    console.print(f"dry run: {', '.join(o['filesystems'])}; profile {o['profile']}"
                  f"{' (scaled down from the studies)' if o['scaled'] else ''}; "
                  f"{o['iterations']} round{'' if o['iterations'] == 1 else 's'}"
                  + (f" then adaptive up to {o['max_iterations']}" if o["adaptive"] else "")
                  + f"; {o['units']} units; target {o['target']}", markup=False)
    print_table([(f["filesystem"], spec_options(FilesystemSpec(**{k: f[k] for k in (
        "name", "variant", "mkfs_options", "mount_options", "properties", "pool_properties")})))
        for f in o["filesystem_options"]], console, title="Options per filesystem (as asked)")
    if any("fio_options" in c for c in o["cases"]):
        console.print(f"page cache {o['page_cache']}: {o['page_cache_means']}", markup=False)
    sliced = sorted({c["design"] for c in o["cases"] if c.get("design", "").startswith("interleaved")})
    if sliced:
        console.print("design: each round's time-based fio case as one block of one fio "
                      "process, each filesystem made fresh on its own loop image, taking turns in "
                      + " / ".join(sliced) + "; every other case one unit per filesystem",
                      markup=False)
    if any("job_file" in c for c in o["cases"]):   # the policy adds nothing to a user's file
        console.print(f"job files: {JOB_FILE_IO}", markup=False)
    if o["too_few_rounds"]:
        console.print(f"note: {o['too_few_rounds']}", markup=False)
    for label, why in o["not_available_here"].items():
        console.print(f"note: {label} cannot be made here now ({why})", markup=False)
    for n in o["notes"]:
        console.print(f"note: {n}", markup=False)
    if o.get("study_deviations"):
        d = o["study_deviations"]
        console.print(f"deviations from the study document ({d['declared_in']}; docs/studies.md):",
                      markup=False)
        for item in d["items"]:
            console.print(f"  - {item}", markup=False)
    for c in o["cases"]:
        params = " ".join(f"{k}={v}" for k, v in c["params"].items() if k != "workload")
        head = f"{c['filesystem']} {c['suite']}:{c['case']}" + (f" {params}" if params else "")
        each = "?" if c["seconds_each"] is None else f"~{number(c['seconds_each'])} s"
        image = ("image sized from the input when the unit runs" if c["image_bytes"] is None
                 else f"image {human(c['image_bytes'], 'B')}")
        # plain lines: rich's highlighting of every number of hundreds of cases was most
        # of a dry run's time (S0 at paper: 1.1 s)
        share = " (its share of a block)" if c.get("design", "").startswith("interleaved") else ""
        console.print(f"{head}  [{image}; {each} each{share}, {c['estimate_from']}]", markup=False,
                      highlight=False)
        if "fio_options" in c:
            console.print("    " + " ".join(f"{k}={v}" for k, v in c["fio_options"].items())
                          + f"  [{c['direct_io']}]", markup=False, highlight=False)
        elif "job_file" in c:
            console.print(f"    job file {c['job_file']} (as run: --json shows its text)  "
                          f"[{c['job_io_text']}; fslab adds no direct=]", markup=False)
            for note in c.get("job_notes", ()):
                console.print(f"    note: {note}", markup=False)
        elif c.get("parameters"):
            console.print("    " + json.dumps(c["parameters"], default=str), markup=False)
        for command in c.get("commands") or ():   # an application suite's command lines
            console.print("    $ " + command, markup=False, soft_wrap=True)
        if c.get("grep_at"):
            console.print(f"    grep at {c['grep_at']}", markup=False)
    total = duration_text(o["estimate_seconds"]) if o["estimate_seconds"] or not o["cases_without_estimate"] \
        else "unknown"
    more = (f" + {o['cases_without_estimate']} case(s) with no estimate (run them once at this "
            "profile and a dry run will know)" if o["cases_without_estimate"] else "")
    console.print(f"estimated duration: {total}{more} (nothing was run)", markup=False)


def duration_text(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {s:02d} s" if m else f"{s} s"
