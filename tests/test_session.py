"""The run session's lifecycle, the same for every executor: run row, final status, exit code.

The executors here are real, tiny ones (they record what they were asked and return an
outcome); the session under test is fslab's own."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
import typer
from rich.console import Console

from fslab import plan as plans
from fslab.errors import FslabError
from fslab.run.session import Executor, Outcome, RunSession
from fslab.store import Store


class Scripted(Executor):
    """An executor whose execute() does what the test says (returns, raises)."""

    def __init__(self, result):
        self.result, self.calls = result, []

    def check(self, session):
        self.calls.append("check")

    def target_info(self):
        return {"kind": "scripted"}

    def environment(self, plan):
        return {"scripted": True}

    def announce(self, session):
        self.calls.append("announce")

    def execute(self, session):
        self.calls.append("execute")
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result

    def summarise(self, session):
        self.calls.append("summarise")


@pytest.fixture
def session(tmp_path, monkeypatch):
    monkeypatch.setenv("FSLAB_STATE_DIR", str(tmp_path / "state"))
    out = io.StringIO()
    plan = plans.from_cli(["ext4"], ["fio"], "smoke", 2, 42)
    s = RunSession(plan, Store(tmp_path / "results"), Console(file=out, width=200))
    s.output = out
    return s


def test_a_finished_run_records_its_environment_status_and_summary(session):
    ex = Scripted(Outcome(done=3))
    run_id = session.run(ex)
    run = session.store.run(run_id)
    assert ex.calls == ["check", "announce", "execute", "summarise"]
    assert run["status"] == "finished"
    env = run["environment"]
    assert env["target"] == {"kind": "scripted"} and env["scripted"] is True
    assert env["profile"]["name"] == "smoke" and env["page_cache"] == "off"
    assert f"run {run_id} finished: 3 units done, 0 failed" in session.output.getvalue()


def test_an_interrupted_run_exits_130_and_says_how_to_resume(session):
    with pytest.raises(typer.Exit) as e:
        session.run(Scripted(Outcome(done=1, interrupted=True)))
    assert e.value.exit_code == 130
    run_id = session.store.latest_run_id()
    assert session.store.run(run_id)["status"] == "interrupted"
    assert f"fslab run --resume {run_id}" in session.output.getvalue()


def test_ctrl_c_before_the_executor_could_catch_it_is_an_interruption_too(session):
    with pytest.raises(typer.Exit) as e:
        session.run(Scripted(KeyboardInterrupt()))
    assert e.value.exit_code == 130
    assert session.store.run(session.store.latest_run_id())["status"] == "interrupted"


def test_a_run_that_measured_nothing_exits_1_after_its_summary(session):
    ex = Scripted(Outcome(failed=4))
    with pytest.raises(typer.Exit) as e:
        session.run(ex)
    assert e.value.exit_code == 1 and ex.calls[-1] == "summarise"
    assert session.store.run(session.store.latest_run_id())["status"] == "finished-with-failures"


def test_an_executor_error_marks_the_run_failed_and_reaches_the_user(session):
    with pytest.raises(FslabError, match="the guest stopped"):
        session.run(Scripted(FslabError("the guest stopped")))
    assert session.store.run(session.store.latest_run_id())["status"] == "failed"


def test_a_refusal_in_check_leaves_no_run_row(session):
    class Refusing(Scripted):
        def check(self, session):
            raise FslabError("needs root")
    with pytest.raises(FslabError):
        session.run(Refusing(Outcome()))
    assert session.store.runs() == []


def test_a_resumed_run_keeps_its_row(session):
    first = session.run(Scripted(Outcome(done=1, failed=1)))
    again = RunSession(session.plan, session.store, session.console, resume=first)
    assert again.run(Scripted(Outcome(done=1, skipped=1))) == first
    assert session.store.run(first)["status"] == "finished"
    assert len(session.store.runs()) == 1


def test_the_guest_executor_refuses_without_qemu_before_any_run_row(session, tmp_path,
                                                                    monkeypatch):
    from fslab.run.guest import GuestExecutor
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(FslabError, match="qemu-system-x86_64"):
        session.run(GuestExecutor())
    assert session.store.runs() == []


def test_the_guest_executor_refuses_when_it_could_not_build_an_image(session, tmp_path,
                                                                      monkeypatch):
    """No cached image and a host that lacks what a build needs (here cpio): one clear line."""
    from fslab.run.guest import GuestExecutor
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "qemu-system-x86_64").symlink_to("/bin/true")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("FSLAB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(FslabError, match="cannot build its guest image here: missing .*cpio"):
        session.run(GuestExecutor())
    assert session.store.runs() == []


# --- a resumed run continues where it started ----------------------------------

def _run_row(kind: str, **where) -> dict:
    return {"run_id": "20261123-000000-abcd", "environment": {"target": {"kind": kind, **where}}}


def test_a_resumed_guest_run_goes_back_to_the_guest():
    # the stored plan does not name the target: without this, a guest run's resume ran on
    # the host (zfs-fuse instead of OpenZFS, and host numbers beside emulated ones)
    from fslab.run.session import resumed_target
    assert resumed_target(_run_row("guest"), None, None, None, None) == ("guest", None)
    assert resumed_target(_run_row("hosts"), None, None, None, None) == ("hosts", None)
    assert resumed_target(_run_row("loop"), None, None, None, None) == ("loop", None)


def test_a_resumed_run_refuses_another_target():
    from fslab.run.session import resumed_target
    with pytest.raises(FslabError, match="ran on the guest target, not loop"):
        resumed_target(_run_row("guest"), "loop", None, None, None)
    with pytest.raises(FslabError, match="ran on the loop target, not hosts"):
        resumed_target(_run_row("loop"), None, None, None, Path("hosts.toml"))


def test_a_resumed_device_run_needs_the_device_confirmed_again():
    from fslab.run.session import resumed_target
    row = _run_row("device", device="/dev/sdz")
    with pytest.raises(FslabError, match="--device /dev/sdz --destroy-data /dev/sdz"):
        resumed_target(row, None, None, None, None)
    assert resumed_target(row, None, "/dev/sdz", None, None) == ("device", None)


def test_a_resumed_mountpoint_run_measures_the_same_directory():
    from fslab.run.session import resumed_target
    row = _run_row("mountpoint", directory="/srv/data")
    assert resumed_target(row, None, None, None, None) == ("mountpoint", Path("/srv/data"))


def test_a_resumed_device_run_refuses_another_device():
    from fslab.run.session import resumed_target
    with pytest.raises(FslabError, match="ran on /dev/sdz, not /dev/sdy"):
        resumed_target(_run_row("device", device="/dev/sdz"), None, "/dev/sdy", None, None)
