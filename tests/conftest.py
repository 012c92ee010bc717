"""Shared fixtures: an isolated state dir and results dir per test, and a leftover check."""
from __future__ import annotations

import atexit
import gc
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def fslab_cmd() -> list[str]:
    """The CLI under test: this checkout's fslab, run by the interpreter running pytest
    (not whatever `fslab` comes first on PATH, which may be another checkout's)."""
    return [sys.executable, "-m", "fslab"]


def needs_root():
    """Mark a test that needs root (loop devices, mounts, daemons): it is an e2e test
    (pytest_collection_modifyitems adds the e2e marker and the skip when not root)."""
    return pytest.mark.needs_root


def pytest_collection_modifyitems(config, items):
    """The tiers: anything that needs root, boots a guest or runs fio is `e2e`, so
    `pytest -m "not e2e"` is the fast tier (no root, mounts, guest, network). A guest test
    is also `serial`: ./run-tests runs those alone, after the tests that share the machine."""
    not_root = pytest.mark.skipif(os.geteuid() != 0,
                                  reason="needs root to create loop devices and mount")
    for item in items:
        if item.get_closest_marker("needs_root"):
            item.add_marker(not_root)
        if any(item.get_closest_marker(m) for m in ("needs_root", "guest", "fio", "serial")):
            item.add_marker(pytest.mark.e2e)
        if item.get_closest_marker("guest") or (item.get_closest_marker("e2e") and uses_zfs(item)):
            item.add_marker(pytest.mark.serial)
    # guests last: on a fresh machine ./run-tests builds their image meanwhile; the type
    # check first: one test of seconds (6 on a fresh clone), which last in the order kept
    # one worker busy while the other had nothing left to run
    items.sort(key=lambda item: (item.get_closest_marker("guest") is not None,
                                 item.module.__name__ not in STARTS_FIRST))


STARTS_FIRST = {"test_types"}


# The cyclic garbage collector looks for cycles every 50,000 allocations instead of 700,
# from here on: collecting the tests imports pytest, fslab, pandas and scipy (about a
# million objects, few cycles) and spent 0.6 s of each worker's 3 s re-scanning them
GC_THRESHOLD = (50_000, 20, 20)
gc.set_threshold(*GC_THRESHOLD)


def pytest_collection_finish(session):
    """What is loaded by now lives as long as this process: the collector stops
    re-scanning it. The fast tier spent 2 s per worker in the collector, now 0.5 s."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


# modules whose e2e tests run plans or default filesystem lists that include zfs
ZFS_MODULES = {"test_plans_four_fs", "test_studies", "test_recommend", "test_reliability"}


def uses_zfs(item) -> bool:
    """Does this test make a zfs filesystem? Two fslab runs on the one zfs-fuse daemon at
    once can leave it running (the run that started it may end first): such tests run
    alone. Read from the test's name and parameters, its source, and the module-level
    strings it names (e.g. FOUR = "ext4,xfs,btrfs,zfs")."""
    import inspect
    if "zfs" in item.nodeid or item.module.__name__ in ZFS_MODULES:
        return True
    fn = getattr(item, "function", None)
    if fn is None:
        return False
    try:
        if "zfs" in inspect.getsource(fn):
            return True
    except (OSError, TypeError):
        return False
    names = set(fn.__code__.co_names)
    return any(isinstance(v, str) and "zfs" in v or isinstance(v, (list, tuple)) and
               any(isinstance(x, str) and "zfs" in x for x in v)
               for k, v in vars(inspect.getmodule(fn)).items() if k in names)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist starts its workers with COLUMNS=80 and LINES=24 when this process has
    neither; an fslab a test starts would then wrap its lines as no serial run does."""
    node.workerinput["terminal_size"] = {v: os.environ.get(v) for v in ("COLUMNS", "LINES")}


def pytest_configure(config):
    for var, value in getattr(config, "workerinput", {}).get("terminal_size", {}).items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value
    if hasattr(config, "workerinput"):
        # registered first, so run last: after every other exit handler (pytest's
        # temporary directories), a worker whose results are all sent ends at once;
        # freeing its million objects one by one kept the run waiting 0.5 s
        atexit.register(_exit_now)


def _exit_now() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


@pytest.fixture
def state_dir(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    monkeypatch.setenv("FSLAB_STATE_DIR", str(d))
    yield d
    # whatever an fslab killed by the test (or by its timeout) noted and left behind:
    # a failing test must not leave mounts, loop devices or guest disks to the next one
    from fslab.system import teardown
    teardown.cleanup()


@pytest.fixture
def results(tmp_path) -> Path:
    return tmp_path / "results"


def run_fslab(*args: str, env: dict | None = None, timeout: float = 900,
              check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.Popen([*fslab_cmd(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "COLUMNS": "160", **(env or {})}, cwd=cwd)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()   # SIGTERM: fslab tears down what it made, as on Ctrl-C
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        raise AssertionError(f"fslab {' '.join(args)} ran over {timeout}s and was stopped\n"
                             f"{out[-3000:]}\n{err[-3000:]}") from None
    p = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check and p.returncode != 0:
        raise AssertionError(f"fslab {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def fslab_in_process(*args: str, env: dict | None = None,
                     check: bool = True) -> subprocess.CompletedProcess:
    """`fslab ARGS` run by this process (Typer's CliRunner), answered as run_fslab answers:
    exit code, stdout, stderr. A new interpreter pays ~1-2 s of imports (pandas, scipy)
    per call, which made the fast tier slow; a test that only reads what the command
    prints and its exit code runs it here. What needs a real process (signals, timeouts,
    `python -m fslab` itself, anything that mounts) keeps run_fslab."""
    from typer.testing import CliRunner

    from fslab.cli import app
    from fslab.commands import _common
    from fslab.errors import FslabError
    columns = int({"COLUMNS": "160", **(env or {})}["COLUMNS"])
    # the commands' consoles were made at import, for whatever stdout pytest had then:
    # print as `python -m fslab` does to a pipe (this width, no colours) for this call
    saved = [(c, c._width, c._color_system) for c in (_common.console, _common.err)]
    try:
        for c, _, _ in saved:
            c._width, c._color_system = columns, None
        r = CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns), **(env or {})})
    finally:
        for c, width, colours in saved:
            c._width, c._color_system = width, colours
    code, err = r.exit_code, r.stderr
    if isinstance(r.exception, FslabError):   # what fslab.cli.main makes of it: one line
        code, err = r.exception.code, err + f"fslab: {r.exception}\n"
    elif r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception   # a traceback: the test fails as it would on the subprocess's
    p = subprocess.CompletedProcess(["fslab", *args], code, r.stdout, err)
    if check and code != 0:
        raise AssertionError(f"fslab {' '.join(args)} exited {code}\n{p.stdout}\n{p.stderr}")
    return p


def mount_leftovers(tag: str = "") -> list[str]:
    """fslab's mounts and loop-device mounts that exist now (the mount table only: fast)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4]
            src = line.partition(" - ")[2].split()[1:2]
            if ("fslab" in mp and (not tag or tag in mp)) or (src and src[0].startswith("/dev/loop")
                                                            and (not tag or tag in mp)):
                out.append(f"mount {mp}")
    return out


def leftovers(tag: str = "") -> list[str]:
    """Mounts, loop devices, zpools and fslab-started daemons that exist now."""
    out = mount_leftovers(tag)
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    for line in loops.splitlines():
        # a test's own (tagged) leftovers count also when their image was deleted
        if (tag and tag in line) or (not tag and "(deleted)" not in line):
            out.append(f"loop {line}")
    if shutil.which("zpool"):
        pools = subprocess.run(["zpool", "list", "-H", "-o", "name"], capture_output=True,
                               text=True, timeout=30).stdout.split()
        out += [f"zpool {p}" for p in pools if p.startswith("fslab") and (not tag or tag in _pool_backing(p))]
    return out


def _pool_backing(pool: str) -> str:
    """The backing files of a pool's loop devices (to tell this test's pools from others')."""
    st = subprocess.run(["zpool", "status", "-P", pool], capture_output=True, text=True).stdout
    files = []
    for word in st.split():
        if word.startswith("/dev/loop") or word.startswith("loop"):
            name = os.path.basename(word)
            p = Path(f"/sys/block/{name}/loop/backing_file")
            if p.exists():
                files.append(p.read_text().strip())
    return " ".join(files)


def sigint_as_at_a_terminal() -> None:
    """preexec_fn for an fslab a test will Ctrl-C: a shell starts background jobs with SIGINT
    ignored, and Python keeps it so: when the suite itself runs in the background, fslab
    would never see the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
