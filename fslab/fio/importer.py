"""Import fio JSON produced elsewhere as a run of its own.

Tags come from the path below the imported root (study S2's layout is
`<fs>/fio_results/<iteration>/<job>-result.json`):
  fs         the first directory part ('unknown' for files directly in the root)
  iteration  the first all-digit directory part; without one, files of the same
             (fs, job) are numbered in path order, so every file stays its own value
  case       the fio job name; when one job name comes from differently named files
             (a flat folder of unrelated outputs), params.file tells them apart
  host       the fio server in client/server output, 'all-clients' for the aggregate
A file that cannot be read is reported in one line and skipped; the rest imports.
"""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from fslab.errors import FslabError
from fslab.fio.parse import FioParseError, JobResult, job_measurements, load_fio_output
from fslab.records import canonical_params

SUFFIXES = (".json", ".txt", ".out", ".log")
UNKNOWN = "unknown"


@dataclass
class FileTags:
    path: Path
    rel: Path
    fs: str
    iteration: int | None
    source: str            # the path without its fs and iteration parts: same workload, same source


@dataclass
class ImportResult:
    run_id: str
    files: int = 0
    records: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)   # (path, reason)


def discover(root: Path) -> tuple[Path, list[Path]]:
    """(base directory for relative paths, the files to import) under `root`."""
    if root.is_file():
        return root.parent, [root]
    if not root.is_dir():
        raise FslabError(f"{root}: no such file or directory")
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    if not files:
        raise FslabError(f"{root}: no fio output files ({', '.join(SUFFIXES)}) below it")
    return root, files


def tags_for(path: Path, base: Path) -> FileTags:
    rel = path.relative_to(base)
    dirs = list(rel.parts[:-1])
    fs = dirs.pop(0) if dirs else UNKNOWN
    iteration = next((int(d) for d in dirs if d.isdigit()), None)
    source = "/".join([d for d in dirs if not d.isdigit()] + [rel.name])
    return FileTags(path, rel, fs, iteration, source)


def import_path(store, root: str | Path, log=print) -> ImportResult:
    root = Path(root)
    base, files = discover(root)
    run_id = store.create_run(f"# imported from {root}\n", {"import": {"path": str(root)}},
                              source=f"import:{root}", status="imported",
                              command=f"fslab import {root}")
    result = ImportResult(run_id)
    raw_dir = store.run_dir(run_id) / "raw"
    parsed: list[tuple[FileTags, list[JobResult], str]] = []
    for path in files:
        tags = tags_for(path, base)
        try:
            data = path.read_bytes()
            jobs = job_measurements(load_fio_output(data, str(tags.rel)))
        except OSError as e:
            result.skipped.append((str(path), e.strerror or str(e)))
            log(f"skipped {path}: {e.strerror or e}")
            continue
        except FioParseError as e:
            result.skipped.append((str(path), str(e).removeprefix(f"{tags.rel}: ")))
            log(f"skipped {path}: {str(e).removeprefix(f'{tags.rel}: ')}")
            continue
        if not jobs:
            result.skipped.append((str(path), "the fio output lists no jobs"))
            log(f"skipped {path}: the fio output lists no jobs")
            continue
        copy = raw_dir / tags.rel
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(data)
        parsed.append((tags, jobs, str(copy.relative_to(store.root))))
    result.files = len(parsed)
    records = list(_records(run_id, parsed))
    result.records = store.add_rows(records)
    store.update_environment(run_id, {"import": {"files": result.files, "records": result.records,
                                                 "skipped": [list(s) for s in result.skipped]}})
    return result


def _records(run_id: str, parsed: list[tuple[FileTags, list[JobResult], str]]):
    ts = time.time()
    # which job names come from more than one source file: those need the file as a param
    sources = defaultdict(set)
    for tags, jobs, _ in parsed:
        for job in jobs:
            sources[job.job_name].add(tags.source)
    counters: dict[tuple, int] = defaultdict(int)
    for tags, jobs, artifact in parsed:
        seen: dict[tuple, int] = defaultdict(int)
        for job in jobs:
            host = "all-clients" if job.aggregate else (job.hostname or UNKNOWN)
            params = {"file": tags.source} if len(sources[job.job_name]) > 1 else {}
            instance = seen[(host, job.job_name)]
            seen[(host, job.job_name)] += 1
            if instance or sum(1 for j in jobs if j.job_name == job.job_name
                               and j.hostname == job.hostname and j.aggregate == job.aggregate) > 1:
                params["job_instance"] = instance     # numjobs without group_reporting
            params_text = canonical_params(params)
            ident = (tags.fs, host, job.job_name, params_text)
            if tags.iteration is not None:
                iteration = tags.iteration
            else:
                counters[ident] += 1
                iteration = counters[ident]
            for m in job.measurements:
                yield ((run_id, host, tags.fs, "default", "fio", job.job_name, params_text,
                            iteration, m.metric, m.value, m.unit, m.better, artifact, ts))
