"""The package's shape: few modules at the root, packages on floors that import only downwards, no import cycles (imports inside functions count)."""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "fslab"
# the checks share one parse of every module (_parsed): one worker runs them all
pytestmark = pytest.mark.xdist_group("test_layout")


@lru_cache(maxsize=None)
def _parsed(text: str) -> ast.Module:
    """One parse per text: the checks below each walk every module's tree, none changes it."""
    return ast.parse(text)


def tree_of(path: Path) -> ast.Module:
    """The module's syntax tree, of its text as it is now (a planted sample is read anew)."""
    return _parsed(path.read_text())


@lru_cache(maxsize=None)
def _walked(tree: ast.Module) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(tree))


def nodes_of(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the module's tree (ast.walk's order), walked once: the checks each
    visit every module's every node, and ast.walk's generator was most of their time."""
    return _walked(tree_of(path))


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for p in package.rglob("*.py"):
        parts = list(p.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def import_sites(package: Path = PACKAGE) -> dict[str, list[tuple[int, str]]]:
    """Module -> (line, fslab module) for every import anywhere in its text (inside functions
    and `if TYPE_CHECKING:` too), including the packages whose __init__ such an import runs
    (outside its own package)."""
    mods = modules(package)

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    sites: dict[str, list[tuple[int, str]]] = {m: [] for m in mods}
    for mod, path in mods.items():
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in nodes_of(path):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            for t in filter(None, map(known, targets)):
                while t and t != mod and not mod.startswith(t + "."):
                    if t in mods:
                        sites[mod].append((node.lineno, t))
                    t = t.rpartition(".")[0]
    return sites


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the fslab modules it imports anywhere in its text (see import_sites)."""
    return {m: {t for _, t in s} for m, s in import_sites(package).items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_even_inside_functions():
    graph = import_graph()
    assert "fslab.system.proc" in graph["fslab.system.deadline"]   # the graph sees imports at all
    assert cycles(graph) == []


# The floors, lowest first: a module may import only from its own package, from packages
# on lower floors, and from another package on its own floor where SIDEWAYS says so.
# docs/architecture.md draws them.
FLOORS = [
    ["fslab", "fslab.errors", "fslab.records"],        # the package root and the record schema
    ["fslab.metrics", "fslab.schema"],                 # the metric catalogue, the number format;
                                                       # every JSON document's schema number
    ["fslab.system"],                                  # host plumbing
    ["fslab.analysis", "fslab.plan", "fslab.store", "fslab.targets"],
    ["fslab.fio", "fslab.guest"],                      # fio's output; the qemu machine
    ["fslab.filesystems"],                             # one driver per filesystem
    ["fslab.features", "fslab.capture"],               # the feature matrix; captured file I/O
    ["fslab.workloads"],                               # the suites
    ["fslab.decide", "fslab.results"],                 # races; results read from a store
    ["fslab.recommend"],
    ["fslab.report"],
    ["fslab.run"],                                     # flags, checks, session, local and guest executors
    ["fslab.remote"],                                  # the multi-host executor
    ["fslab.commands"],
    ["fslab.cli"],
    ["fslab.__main__"],
]
SIDEWAYS: set[tuple[str, str]] = set()                 # (importer, imported) on one floor


def floor_of(module: str, floors: list[list[str]]) -> tuple[int, str] | None:
    """(floor, package) of a module: the longest package name of the floors it lies in
    (the top package's name, "fslab", stands for its __init__ only)."""
    best = None
    for i, floor in enumerate(floors):
        for name in floor:
            inside = module.startswith(name + ".") and "." in name
            if (module == name or inside) and (
                    best is None or len(name) > len(best[1])):
                best = (i, name)
    return best


def against_the_floors(floors: list[list[str]], package: Path = PACKAGE,
                       sideways: set[tuple[str, str]] = frozenset()) -> list[str]:
    """Every import (at any depth) from a package to one on a higher floor, or to another
    package on its own floor, as 'path:line: module imports target (why)'; a module on no
    floor is named too."""
    found = []
    mods = modules(package)         # once: a walk of the package's files
    for mod, sites in sorted(import_sites(package).items()):
        rel = mods[mod].relative_to(package.parent).as_posix()
        here = floor_of(mod, floors)
        if here is None:
            found.append(f"{rel}: {mod} is on no floor (add its package to FLOORS)")
            continue
        for line, target in sorted(set(sites)):
            there = floor_of(target, floors)
            if there is None or there[1] == here[1]:
                continue
            if there[0] > here[0]:
                found.append(f"{rel}:{line}: {mod} imports {target} "
                             f"({here[1]} on floor {here[0]} is below {there[1]} on floor {there[0]})")
            elif there[0] == here[0] and (here[1], there[1]) not in sideways:
                found.append(f"{rel}:{line}: {mod} imports {target} "
                             f"({here[1]} and {there[1]} share floor {here[0]})")
    return found


def test_floor_checker_finds_planted_upward_imports(tmp_path):
    root = tmp_path / "fslab"
    files = {
        "__init__.py": "",
        "system/__init__.py": "",
        "system/proc.py": "def run():\n    from fslab.report.tables import table\n",
        "store/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                             "    from fslab.analysis import Analysis\n",
        "analysis/__init__.py": "",
        "report/__init__.py": "",
        "report/tables.py": "from fslab.system.proc import run\nfrom . import __name__ as n\n",
        "cli.py": "import fslab.report.tables\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    floors = [["fslab"], ["fslab.system"], ["fslab.analysis", "fslab.store"], ["fslab.report"]]
    assert against_the_floors(floors, root) == [
        "fslab/cli.py: fslab.cli is on no floor (add its package to FLOORS)",
        "fslab/store/__init__.py:3: fslab.store imports fslab.analysis "
        "(fslab.store and fslab.analysis share floor 2)",
        "fslab/system/proc.py:2: fslab.system.proc imports fslab.report "
        "(fslab.system on floor 1 is below fslab.report on floor 3)",
        "fslab/system/proc.py:2: fslab.system.proc imports fslab.report.tables "
        "(fslab.system on floor 1 is below fslab.report on floor 3)",
    ]
    assert against_the_floors(floors + [["fslab.cli"]], root,
                              sideways={("fslab.store", "fslab.analysis")}) == [
        f for f in against_the_floors(floors, root) if "fslab/system/" in f]


def test_every_import_points_down_the_floors():
    """Imports inside functions count: a lower floor never reaches up, even lazily."""
    assert against_the_floors(FLOORS, PACKAGE, SIDEWAYS) == []


def test_at_most_six_plain_modules_at_the_package_root():
    plain = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(plain) <= 6, plain


def test_every_package_directory_is_a_regular_package():
    """A directory without __init__.py is left out of a wheel by setuptools' find."""
    for d in PACKAGE.rglob("*"):
        if d.is_dir() and any(d.glob("*.py")) and d.name != "__pycache__":
            assert (d / "__init__.py").exists(), d


# Names of filesystems fslab has drivers for (literal, so the test needs no import).
FILESYSTEM_NAMES = {"ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "zfs-fuse", "tmpfs", "f2fs",
                    "jfs", "nilfs2", "reiserfs", "raw"}
# Literal filesystem names outside fslab/filesystems/ that are not a question to a driver.
ALLOWED = {
    # the tasks suite's source disk is deliberately ext4, whatever is under test
    ("fslab/workloads/tasks.py", "ext4"),
    # doctor's table of Debian packages to look up (the zfs-fuse package)
    ("fslab/commands/doctor.py", "zfs-fuse"),
    # `--baseline raw` names the bare-device driver and adds it to the plan once
    ("fslab/run/flags.py", "raw"),
}


def _literal_names(node: ast.AST) -> set[str]:
    """Filesystem names among the string literals of `node` (a str, tuple, list or set)."""
    return {n.value for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in FILESYSTEM_NAMES}


def driver_questions(path: Path) -> list[str]:
    """Where a module asks which filesystem it talks to: compares something with a literal
    filesystem name (==, !=, in, startswith), or touches an attribute `.pool`."""
    rel = path.relative_to(PACKAGE.parent).as_posix()
    found = []
    for node in nodes_of(path):
        names: set[str] = set()
        if isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
            for side in [node.left, *node.comparators]:
                names |= _literal_names(side)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith") and node.args):
            names |= _literal_names(node.args[0])
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names |= {n for n in FILESYSTEM_NAMES if n.startswith(node.args[0].value)
                          and node.args[0].value in ("ext", "zfs", "btrfs", "xfs")}
        elif isinstance(node, ast.Dict):        # a table keyed by filesystem name
            names |= {k.value for k in node.keys if isinstance(k, ast.Constant)
                      and isinstance(k.value, str) and k.value in FILESYSTEM_NAMES}
        elif (isinstance(node, ast.Attribute) and node.attr == "pool"
              and not (isinstance(node.value, ast.Name) and node.value.id == "self")):
            # `self.pool` is a class's own field (the payload's random pool), not a driver's
            found.append(f"{rel}:{node.lineno}: .pool")
        for n in sorted(names - {fs for f, fs in ALLOWED if f == rel}):
            found.append(f"{rel}:{node.lineno}: {n!r}")
    return found


def test_driver_question_finder_sees_the_real_patterns(tmp_path):
    sample = PACKAGE / "_layout_sample.py"
    text = ('if inst.driver.name == "btrfs": pass\nif fs in ("ext3", "ext4"): pass\n'
            'x = inst.pool\nw = self.pool\nSHOWN = {"xfs": "xfs_growfs"}\ny = name.startswith("ext")\n'
            'z = name == "global"\n')
    sample.write_text(text)
    try:
        hits = driver_questions(sample)
    finally:
        sample.unlink()
    assert [h.split(": ", 1)[1] for h in hits] == ["'btrfs'", "'ext3'", "'ext4'", ".pool",
                                                  "'xfs'", "'ext2'", "'ext3'", "'ext4'"]


def test_only_drivers_ask_which_filesystem_they_talk_to():
    """Filesystem quirks are Driver capabilities (fslab/filesystems/base.py), never a name
    check elsewhere: a new filesystem is one driver file."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "filesystems" in path.relative_to(PACKAGE).parts[:1]:
            continue
        found += driver_questions(path)
    assert found == []


# --- the metric catalogue (fslab/metrics) ----------------------------------------------------

# Where suites' metrics are made, and the suites each module makes them for.
EMITTERS = {
    "fslab/fio/parse.py": ("fio", "dedup"),
    "fslab/fio/accounting.py": ("fio", "dedup"),
    "fslab/workloads/fio.py": ("fio",),
    "fslab/system/measure.py": ("tasks",),
    "fslab/workloads/support/devices.py": ("tasks", "largefile", "smallfiles"),
    "fslab/workloads/capacity.py": ("capacity", "largefile", "smallfiles", "dedup"),
    "fslab/workloads/largefile.py": ("largefile",),
    "fslab/workloads/smallfiles.py": ("smallfiles",),
    "fslab/workloads/dedup.py": ("dedup",),
    "fslab/workloads/tasks.py": ("tasks",),
    "fslab/workloads/enospc.py": ("enospc",),
    "fslab/workloads/integrity.py": ("integrity",),
    "fslab/workloads/crash.py": ("crash",),
    "fslab/workloads/aging.py": ("aging",),
    "fslab/workloads/features.py": ("features",),
    "fslab/workloads/probes/dedup.py": ("features",),
    "fslab/workloads/probes/compression.py": ("features",),
}
# Where outputs pick metrics by name: reports, recommend, the run summary, remote, decide.
OUTPUTS = ("fslab/report", "fslab/results", "fslab/recommend", "fslab/run/summary.py",
           "fslab/decide", "fslab/commands")


def _name_check(node: ast.AST):
    """A test for a metric name as written: a literal, or an f-string (its fields as any
    text: some declared name or family must fit it)."""
    import re
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, lambda cat: cat.find(node.value) is not None, True
    if isinstance(node, ast.JoinedStr):
        parts = [re.escape(v.value) if isinstance(v, ast.Constant) else "(.+)" for v in node.values]
        pattern = re.compile("".join(parts))
        samples = ["".join(v.value if isinstance(v, ast.Constant) else word for v in node.values)
                   for word in ("x", "read", "write", "sync")]
        return (pattern.pattern, lambda cat: any(x in cat for x in samples) or any(
            not m.family and pattern.fullmatch(m.key) for m in cat), False)
    return None, None, False


def _call_name(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _emitting(tree: ast.AST) -> tuple[set[str], set[str]]:
    """Names that emit a metric named by their first argument: local functions whose first
    parameter is `metric` (`def m(metric, value)`), and aliases of a catalogue's measure
    (`m = self.metrics.measure`)."""
    helpers, aliases = set(), set()
    for n in _walked(tree):
        if isinstance(n, ast.FunctionDef) and n.args.args and n.args.args[0].arg == "metric":
            helpers.add(n.name)
        elif (isinstance(n, ast.Assign) and isinstance(n.value, ast.Attribute)
              and n.value.attr == "measure"):
            aliases |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    return helpers, aliases


def emitted(rel: str) -> list[tuple]:
    """(line, name, test) of each metric a module makes: through a catalogue
    (`FIO.measure("read_iops", ...)`, `self.metrics.measure(...)`, `metrics.measure(suite,
    "name", ...)`) or a local helper or alias of one."""
    tree = tree_of(PACKAGE.parent / rel)
    helpers, aliases = _emitting(tree)
    found = []
    for node in nodes_of(PACKAGE.parent / rel):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        fn = _call_name(node)
        if fn == "measure" and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id == "metrics":
            name = node.args[1] if len(node.args) > 1 else None   # metrics.measure(suite, metric)
        elif fn == "measure" and isinstance(node.func, ast.Attribute) or \
                fn in helpers | aliases and isinstance(node.func, ast.Name):
            name = node.args[0]
        else:
            continue
        text, test, _ = _name_check(name)
        if test is not None:
            found.append((node.lineno, text, test))
    return found


def test_every_metric_a_suite_records_is_declared():
    """Unit and direction come from the declaration (Catalogue.measure); a name that is not
    declared would fail at run time: this finds it before a run does."""
    from fslab import metrics
    problems = []
    for rel, suites in EMITTERS.items():
        cats = [metrics.declared(s) for s in suites]
        assert all(cats), rel
        made = emitted(rel)
        assert made, f"{rel}: no metric found (has the way it records them changed?)"
        for line, name, test in made:
            if not any(test(c) for c in cats):
                problems.append(f"{rel}:{line}: {name!r} is declared by none of {suites}")
    assert problems == []


def test_fio_records_every_corpus_metric_with_its_declared_unit_and_direction():
    """fio's names are made in loops (per direction, statistic and percentile): the parser
    over the recorded fio JSON of many versions says which ones appear, and each carries its
    declared unit and direction, but for a rate of a run too short to time (recorded
    unranked, beside its run time)."""
    from fslab import metrics
    from fslab.errors import FslabError
    from fslab.fio.parse import job_measurements, load_fio_output
    corpus = sorted(Path("/work/shared/corpus/fio-json").glob("*.json")) + \
        sorted((Path(__file__).parent / "data").glob("fio-*.json"))
    fio = metrics.declared("fio")
    seen, short = set(), 0
    for path in corpus:
        try:
            jobs = job_measurements(load_fio_output(path.read_bytes(), str(path)))
        except FslabError:
            continue
        for job in jobs:
            names = {m.metric for m in job.measurements}
            for m in job.measurements:
                d = fio.find(m.metric)
                assert d is not None, (path.name, m.metric)
                unranked = d.quantity == "throughput" and \
                    f"{m.metric.split('_')[0]}_runtime" in names
                short += unranked
                assert (m.unit, m.better) == (d.unit, None if unranked else d.better), \
                    (path.name, m.metric, m.unit, m.better)
                seen.add(m.metric)
    assert {"read_iops", "write_clat_p99", "sync_lat_p99"} <= seen
    assert short          # the corpus holds a run too short to time: its rates are unranked


def _metricish(node: ast.AST) -> bool:
    """A metric's name itself: `metric`, `r["metric"]`, `row.metric`, `records["metric"]`."""
    if isinstance(node, ast.Name):
        return "metric" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return node.attr == "metric"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "metric"
    return False


def used_names(path: Path) -> list[tuple[int, ast.AST]]:
    """Metric names an output picks by name: compared with a metric, or in an .isin() on one."""
    found = []
    for node in nodes_of(path):
        sides = []
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn))
                                                 for op in node.ops):
            parts = [node.left, *node.comparators]
            if any(_metricish(p) and not isinstance(p, (ast.Constant, ast.Tuple, ast.List, ast.Set))
                   for p in parts):
                sides = [p for p in parts if isinstance(p, (ast.Constant, ast.Tuple, ast.List, ast.Set))]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "isin" and _metricish(node.func.value) and node.args):
            sides = [node.args[0]]
        for side in sides:
            keys = {id(n.slice) for n in ast.walk(side) if isinstance(n, ast.Subscript)}
            for n in ast.walk(side):
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value \
                        and id(n) not in keys:
                    found.append((node.lineno, n))
    return found


def test_every_metric_an_output_picks_by_name_is_declared_by_a_suite():
    from fslab import metrics
    every = metrics.every()
    files = [p for out in OUTPUTS for p in sorted((PACKAGE.parent / out).rglob("*.py"))
             if (PACKAGE.parent / out).is_dir()] + \
        [PACKAGE.parent / out for out in OUTPUTS if out.endswith(".py")]
    found, missing = 0, []
    for path in files:
        rel = path.relative_to(PACKAGE.parent).as_posix()
        for line, n in used_names(path):
            found += 1
            if n.value not in every:
                missing.append(f"{rel}:{line}: {n.value!r}")
    assert found >= 4          # the finder sees the outputs' picks at all
    assert missing == []


def _declared_names() -> set[str]:
    from fslab import metrics
    return {m.key for m in metrics.every() if not m.family}


def meanings_outside_the_catalogue(path: Path, names: set[str]) -> list[str]:
    """A table keyed by metric names (labels, directions, roles) or a collection of metric
    names (a role: the answers, the throughput metrics, the outcomes) written outside
    fslab/metrics."""
    rel = path.relative_to(PACKAGE.parent).as_posix()
    found = []
    for node in nodes_of(path):
        if isinstance(node, ast.Dict):
            elts = node.keys
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elts = node.elts
        else:
            continue
        lits = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        hits = [v for v in lits if v in names]
        if len(hits) >= 2 and len(hits) == len(elts):
            found.append(f"{rel}:{node.lineno}: {hits}")
    return found


# Collections of metric names outside the catalogue that are not a metric's meaning: the
# study figures reproduce the studies' own tables, the recommend profiles' criteria name
# what they weigh, SUMS says which parts recommend adds, and the modules that record
# metrics (EMITTERS, workloads/support) name what they record (checked against the
# catalogue above).
MEANING_ALLOWED = ("fslab/report/figures/", "fslab/recommend/priorities.py",
                   "fslab/recommend/measures.py", "fslab/report/claims/",
                   "fslab/workloads/support/", *EMITTERS)


def test_metric_meanings_are_defined_in_the_catalogue_only():
    names = _declared_names()
    sample = PACKAGE / "_layout_sample.py"
    sample.write_text('LABELS = {"read_iops": "read IOPS", "elapsed": "time"}\n'
                      'ANSWERS = ("silent", "total_time")\nx = ("read_iops", "other")\n')
    try:
        assert len(meanings_outside_the_catalogue(sample, names)) == 2
    finally:
        sample.unlink()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if rel.startswith("fslab/metrics/") or rel.startswith(MEANING_ALLOWED):
            continue
        found += meanings_outside_the_catalogue(path, names)
    assert found == []


# --- units and directions: the catalogue's alone ---------------------------------------------

DIRECTION_WORDS = {"higher", "lower"}


def _strings(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def literal_meanings(path: Path, units: set[str], names) -> list[str]:
    """Where a module outside the catalogue gives a metric its unit or direction itself:
    a `Measurement(` with a unit or direction written in the call (or a direction kept in a
    variable for it); a call that names a metric beside a unit or direction literal (a local
    helper's `m("silent", 3, "count", "lower")`); a helper taking `metric` whose default is
    one; a dict that states a metric's "unit" or "better". `names(node)` says whether a
    string node names a metric. Comparisons with a direction, arrows keyed by one and
    sentences that say one bind none to a metric."""
    rel = path.relative_to(PACKAGE.parent).as_posix()
    words = DIRECTION_WORDS | units
    kept = {t.id for n in nodes_of(path) if isinstance(n, (ast.Assign, ast.AnnAssign))
            and n.value is not None and _strings(n.value) & DIRECTION_WORDS
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            if isinstance(t, ast.Name)}
    found = []

    def hit(node, what):
        found.append(f"{rel}:{node.lineno}: {what}")

    for node in nodes_of(path):
        if isinstance(node, ast.Call):
            args = [*node.args, *(k.value for k in node.keywords)]
            if _call_name(node) == "Measurement":
                given = dict(zip(["metric", "value", "unit", "better"], node.args))
                given.update({k.arg: k.value for k in node.keywords if k.arg})
                for key in ("unit", "better"):
                    v = given.get(key)
                    if v is not None and (_strings(v) & words or
                                          isinstance(v, ast.Name) and v.id in kept):
                        hit(node, f"Measurement with its own {key}")
            elif any(names(a) for a in args):
                said = [a.value for a in args if isinstance(a, ast.Constant) and a.value in words]
                if said:
                    hit(node, f"a metric given {said} outside the catalogue")
        elif isinstance(node, (ast.FunctionDef, ast.Lambda)) and \
                "metric" in [a.arg for a in node.args.args]:
            said = [d.value for d in node.args.defaults
                    if isinstance(d, ast.Constant) and d.value in words]
            if said:
                hit(node, f"a metric helper defaulting to {said}")
        elif isinstance(node, ast.Dict):
            keys = {k.value: v for k, v in zip(node.keys, node.values)
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            for key in ("unit", "better"):
                if key in keys and _strings(keys[key]) & words:
                    hit(node, f"a dict stating a {key}")
    return found


def _metric_namer():
    from fslab import metrics
    every = metrics.every()

    def names(node: ast.AST) -> bool:
        if isinstance(node, ast.JoinedStr) and not any(
                isinstance(v, ast.Constant) and "_" in v.value for v in node.values):
            return False        # an f-string without a name's fixed part: any text fits it
        _, test, _ = _name_check(node)
        return bool(test and test(every))
    return names, {m.unit for m in every}


def test_the_literal_finder_sees_units_and_directions_bound_to_a_metric():
    names, units = _metric_namer()
    sample = PACKAGE / "_layout_sample.py"
    sample.write_text(
        'a = Measurement("silent", 1.0, "count", "lower")\n'                        # 1
        'b = Measurement(name, v, unit="s")\n'                                      # 2
        'rank = None if short else "higher"\n'
        'c = Measurement(name, v, u, rank)\n'                                       # 4
        'd = m("read_iops", v, "ops/s", "higher")\n'                                # 5
        'e = rec(f"grep_cost_{state}", v, "s/GB", "lower")\n'                       # 6
        'def m(metric, value, unit, better="lower"):\n    pass\n'                  # 7
        'f = {"metric": metric, "unit": "B", "better": None}\n'                    # 9
        # not bound to a metric: arrows, comparisons, sentences, a test's direction, the catalogue
        'g = {"higher": "↑", "lower": "↓"}.get(better, "")\n'
        'h = r["better"] == "higher" or rows["better"].isin(["higher", "lower"])\n'
        'i = f"{\'higher\' if b == \'higher\' else \'lower\'} is better"\n'
        'j = compare_levels(x, "lower", pairable=True)\n'
        'k = metrics.measure("integrity", "silent", 3)\n'
        'l = Measurement(r.metric, r.value, r.unit, r.better)\n')
    try:
        hits = literal_meanings(sample, units, names)
    finally:
        sample.unlink()
    assert sorted(int(h.split(":")[1]) for h in hits) == [1, 1, 2, 4, 5, 6, 7, 9], hits


def test_units_and_directions_of_metrics_live_in_the_catalogue_only():
    """A suite emits through its declaration (fslab/metrics/declared.py): no module outside
    fslab/metrics writes a metric's unit or says which way is better."""
    names, units = _metric_namer()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if not path.relative_to(PACKAGE.parent).as_posix().startswith("fslab/metrics/"):
            found += literal_meanings(path, units, names)
    assert found == []


# --- the run's environment is read through RunEnvironment (fslab/store/environment.py) ----

def environment_by_key(path: Path) -> list[str]:
    """Where a module takes a run's stored environment out of its row by key
    (`run["environment"]`, `run.get("environment")`) instead of RunEnvironment.of_run."""
    rel = path.relative_to(PACKAGE.parent).as_posix()
    found = []
    for node in nodes_of(path):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key = node.slice
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("get", "setdefault", "pop") and node.args):
            key = node.args[0]
        if isinstance(key, ast.Constant) and key.value == "environment":
            found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_environment_finder_sees_a_planted_read(tmp_path):
    sample = PACKAGE / "_layout_env_sample.py"
    sample.write_text('a = run["environment"]["load"]\nb = (run.get("environment") or {}).get("cpus")\n'
                      'c = RunEnvironment.of_run(run).cpus\nctx.environment["filesystem"] = {}\n'
                      'd = {"environment": a}\n')
    try:
        hits = environment_by_key(sample)
    finally:
        sample.unlink()
    assert [h.split(": ", 1)[1] for h in hits] == ["run['environment']", "run.get('environment')"]


def test_only_the_store_reads_the_environment_by_key():
    """docs/architecture.md: readers never index the stored environment; RunEnvironment
    (fslab/store/environment.py) is its one reader, with one answer for a missing key."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if not rel.startswith("fslab/store/"):
            found += environment_by_key(path)
    assert found == []


def test_the_decide_command_parses_flags_and_prints_only():
    """decide's workflow is fslab/run/decide.py's (asv's way: a command parses its arguments
    and calls one function); the command module stays small and runs no stage itself."""
    path = PACKAGE / "commands" / "decide.py"
    assert len(path.read_text().splitlines()) < 120
    imported = {t for _, t in import_sites()["fslab.commands.decide"]}
    assert "fslab.run.decide" in imported
    assert not imported & {"fslab.run.session", "fslab.run.local", "fslab.decide.stages",
                           "fslab.decide.policy", "fslab.run.probe"}
