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

import multiprocessing
import os
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from fslab.errors import FslabError
from fslab.fio.parse import FioParseError, job_measurements, load_fio_output
from fslab.records import DEFAULT_VARIANT, canonical_params
from fslab.system import forked

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
    """(base directory for relative paths, the files to import) under `root`, in path order
    (part by part, as pathlib sorts; symlinked directories are not followed)."""
    if root.is_file():
        return root.parent, [root]
    if not root.is_dir():
        raise FslabError(f"{root}: no such file or directory")
    files = sorted(_walk(str(root)), key=lambda p: p.split(os.sep))
    if not files:
        raise FslabError(f"{root}: no fio output files ({', '.join(SUFFIXES)}) below it")
    return root, [Path(p) for p in files]


def _walk(directory: str):
    """Paths of fio output files below `directory` (os.scandir: no stat per file)."""
    try:
        with os.scandir(directory) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    yield from _walk(e.path)
                elif e.name.lower().endswith(SUFFIXES) and e.is_file():
                    yield e.path
    except PermissionError:
        return


def tags_for(path: Path, base: Path) -> FileTags:
    rel = path.relative_to(base)
    dirs = list(rel.parts[:-1])
    fs = dirs.pop(0) if dirs else UNKNOWN
    iteration = next((int(d) for d in dirs if d.isdigit()), None)
    source = "/".join([d for d in dirs if not d.isdigit()] + [rel.name])
    return FileTags(path, rel, fs, iteration, source)


# (job name, hostname, aggregate, [(metric, value, unit, better), ...]) per job: what
# _records needs, cheap to send back from a worker process
Parsed = list[tuple[str, "str | None", bool, list[tuple]]]


def _read_and_keep(path: Path, rel: Path, raw_dir: Path, made: set) -> Parsed | str:
    """Parse one file and keep it under raw_dir; returns its jobs, or why it was skipped.

    The raw copy is a hard link when the store is on the same filesystem (no data
    copied; it survives the original being deleted or replaced), else a real copy."""
    try:
        data = path.read_bytes()
        jobs = job_measurements(load_fio_output(data, str(rel)))
    except OSError as e:
        return e.strerror or str(e)
    except FioParseError as e:
        return str(e).removeprefix(f"{rel}: ")
    if not jobs:
        return "the fio output lists no jobs"
    copy = raw_dir / rel
    if copy.parent not in made:
        copy.parent.mkdir(parents=True, exist_ok=True)
        made.add(copy.parent)
    try:
        os.link(path, copy)
    except OSError:
        copy.write_bytes(data)
    return [(j.job_name, j.hostname, j.aggregate,
             [(m.metric, m.value, m.unit, m.better) for m in j.measurements]) for j in jobs]


def _parse_chunk(args: tuple[list[tuple[Path, Path]], Path]) -> list[Parsed | str]:
    files, raw_dir = args
    made: set[Path] = set()        # directories of raw copies created so far
    return [_read_and_keep(path, rel, raw_dir, made) for path, rel in files]


def _parse_all(files: list[tuple[Path, Path]], raw_dir: Path) -> list[Parsed | str]:
    """_read_and_keep for every file, in order; over all cores for large imports."""
    workers = forked.workers("fio import", len(files))
    if workers < 2:
        return _parse_chunk((files, raw_dir))
    chunks = [(part, raw_dir) for part in forked.chunks("fio import", files)]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return [r for chunk in pool.map(_parse_chunk, chunks) for r in chunk]


def import_path(store, root: str | Path, log=print) -> ImportResult:
    root = Path(root)
    base, files = discover(root)
    run_id = store.create_run(f"# imported from {root}\n", {"import": {"path": str(root)}},
                              source=f"import:{root}", status="imported",
                              command=f"fslab import {root}")
    result = ImportResult(run_id)
    raw_dir = store.run_dir(run_id) / "raw"
    raw_prefix = raw_dir.relative_to(store.root)
    tags = [tags_for(path, base) for path in files]
    parsed: list[tuple[FileTags, Parsed, str]] = []
    for t, outcome in zip(tags, _parse_all([(t.path, t.rel) for t in tags], raw_dir)):
        if isinstance(outcome, str):
            result.skipped.append((str(t.path), outcome))
            log(f"skipped {t.path}: {outcome}")
        else:
            parsed.append((t, outcome, str(raw_prefix / t.rel)))
    result.files = len(parsed)
    records = list(_records(run_id, parsed))
    result.records = store.add_rows(records)
    store.update_environment(run_id, {"import": {"files": result.files, "records": result.records,
                                                 "skipped": [list(s) for s in result.skipped]}})
    return result


def _records(run_id: str, parsed: list[tuple[FileTags, Parsed, str]]):
    ts = time.time()
    # which job names come from more than one source file: those need the file as a param
    sources = defaultdict(set)
    for tags, jobs, _ in parsed:
        for name, *_ in jobs:
            sources[name].add(tags.source)
    counters: dict[tuple, int] = defaultdict(int)
    for tags, jobs, artifact in parsed:
        seen: dict[tuple, int] = defaultdict(int)
        same = Counter((name, hostname, aggregate) for name, hostname, aggregate, _ in jobs)
        for name, hostname, aggregate, measurements in jobs:
            host = "all-clients" if aggregate else (hostname or UNKNOWN)
            params = {"file": tags.source} if len(sources[name]) > 1 else {}
            instance = seen[(host, name)]
            seen[(host, name)] += 1
            if instance or same[(name, hostname, aggregate)] > 1:
                params["job_instance"] = instance     # numjobs without group_reporting
            params_text = canonical_params(params)
            ident = (tags.fs, host, name, params_text)
            if tags.iteration is not None:
                iteration = tags.iteration
            else:
                counters[ident] += 1
                iteration = counters[ident]
            for metric, value, unit, better in measurements:
                yield (run_id, host, tags.fs, DEFAULT_VARIANT, "fio", name, params_text,
                       iteration, metric, value, unit, better, artifact, ts)
