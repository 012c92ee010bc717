"""The package's shape: few modules at the root, no import cycles (imports inside functions count)."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "fslab"


def modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = list(p.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the fslab modules it imports anywhere in its text, including the packages
    whose __init__ such an import runs (outside its own package)."""
    mods = modules()

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            for t in filter(None, map(known, targets)):
                while t and t != mod and not mod.startswith(t + "."):
                    if t in mods:
                        graph[mod].add(t)
                    t = t.rpartition(".")[0]
    return graph


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
    assert "fslab.system.proc" in graph["fslab.run.deadline"]   # the graph sees imports at all
    assert cycles(graph) == []


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
    ("fslab/plan/flags.py", "raw"),
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
    for node in ast.walk(ast.parse(path.read_text())):
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
