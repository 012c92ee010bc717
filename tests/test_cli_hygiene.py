"""The command line as a sysadmin's hands meet it: flags shown as flags in every --help,
reading commands that create nothing, and exit code 2 for every input mistake."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from fslab.cli import app
from fslab.errors import FslabError
from fslab.records import Record
from fslab.store.db import Store

COMMANDS = ("run", "list", "report", "compare", "recommend", "features", "options", "import",
            "doctor", "cleanup")


def _cli(*args: str) -> tuple[int, str]:
    """(exit code, output or the error's one line), as `fslab` (cli.main) ends."""
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    if isinstance(r.exception, FslabError):
        return r.exception.code, str(r.exception)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.stdout


@pytest.fixture
def empty_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FSLAB_RESULTS", raising=False)
    return tmp_path


@pytest.mark.parametrize("command", (None, *COMMANDS))
def test_help_shows_flags_as_flags(command):
    code, out = _cli(*([command] if command else []), "--help")
    assert code == 0
    assert "<bool>" not in out, out
    assert "--help " in out


def test_run_help_still_shows_what_options_take():
    _, out = _cli("run", "--help")
    line = next(ln for ln in out.splitlines() if "--iterations" in ln)
    assert "<int>" in line
    assert "off|on" in next(ln for ln in out.splitlines() if "--page-cache" in ln)


def test_reading_commands_in_an_empty_directory_create_no_store(empty_dir):
    assert _cli("list") == (0, "no runs: no results store in fslab-results\n")
    code, out = _cli("list", "--json")
    assert code == 0 and json.loads(out)["runs"] == []
    for args in (["report"], ["recommend"], ["compare", "a", "b"], ["features", "--run", "x"],
                 ["run", "--resume", "x"]):
        code, why = _cli(*args)
        assert code == 2 and "no results store in fslab-results" in why, (args, why)
    assert list(empty_dir.iterdir()) == []


def test_every_input_mistake_exits_2(tmp_path):
    results = str(tmp_path / "res")
    store = Store(results)
    run_id = store.create_run("[run]\n", {}, source="test", status="finished")
    store.add_records(Record(run_id, "localhost", "ext4", "default", "fio", "randread", "{}", it,
                             "read_iops", 1000.0 + it, "ops/s", "higher", None, 0.0)
                      for it in (1, 2, 3))
    mistakes = {
        "unknown run (report)": ["report", "nosuch", "-r", results],
        "unknown run (recommend)": ["recommend", "nosuch", "-r", results],
        "unknown run (compare)": ["compare", run_id, "nosuch", "-r", results],
        "unknown run (resume)": ["run", "--resume", "nosuch", "-r", results],
        "unknown run (features)": ["features", "--run", "nosuch", "-r", results],
        "the same run twice": ["compare", run_id, run_id, "-r", results],
        "unknown factor": ["report", run_id, "-r", results, "--factor", "colour"],
        "unknown priorities": ["recommend", run_id, "-r", results, "-p", "speed"],
        "unknown filesystem (options)": ["options", "ext9"],
        "unknown filesystem (features)": ["features", "--fs", "ext4,ext9"],
        "import of nothing": ["import", str(tmp_path / "missing"), "-r", results],
        "unwritable report": ["report", run_id, "-r", results, "--markdown", "/proc/no/r.md"],
        "unknown profile": ["run", "--profile", "fast", "--dry-run"],
        "a file as the results directory": ["list", "--results", "/proc/version"],
    }
    for what, args in mistakes.items():
        code, why = _cli(*args)
        assert code == 2, f"{what}: exit {code}: {why}"
        assert "Traceback" not in why and why.strip(), what


def test_a_refused_run_leaves_no_store(empty_dir):
    """Refused after its flags were read (job files run on this host only), before a run
    row: no fslab.sqlite, no results directory."""
    job = empty_dir / "j.fio"
    job.write_text("[j]\nrw=read\nsize=1m\n")
    code, why = _cli("run", "--fs", "ext4", "--job", str(job), "--target", "guest",
                     "--profile", "smoke", "-r", str(empty_dir / "res"))
    assert code != 0 and "job files" in why, why
    assert sorted(p.name for p in empty_dir.iterdir()) == ["j.fio"]
