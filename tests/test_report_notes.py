"""What the report owes its reader besides the verdicts: a failed unit's partial numbers
are left out whole, the assumption checks say when there are too few values, adaptive
rounds show how they ended, and a run without device counters says that memory-bound
numbers were not checked. Stores are built with the store API, as a run writes them."""
from __future__ import annotations

import json
import time

import pytest

from conftest import needs_root, run_fslab

from fslab.records import Measurement, UnitKey, stamp
from fslab.results.load import load
from fslab.store.db import Store

TASKS = ("03-copy-iso", "04-recopy-iso")


def _tasks_unit(store, run_id, fs, it, seconds, status="done", message=None):
    """One S3 tasks unit as the scheduler stores it: each task is its own case, its
    records point at a log inside the unit's artifact directory."""
    key = UnitKey("localhost", fs, "default", "tasks", "fileserver", "{}", it)
    rel = f"runs/{run_id}/{key.slug()}"
    ms = [Measurement("elapsed", seconds + i, "s", "lower", f"{rel}/tasks.log", case=task)
          for i, task in enumerate(TASKS)]
    store.finish_unit(run_id, key, [stamp(key, run_id, m) for m in ms], status, message,
                      time.time(), rel)


@pytest.fixture
def tasks_store(tmp_path):
    store = Store(tmp_path)
    run_id = store.create_run("[run]\n", {}, profile="smoke")
    for it in (1, 2, 3):
        _tasks_unit(store, run_id, "ext4", it, 10.0 + it / 10)
        _tasks_unit(store, run_id, "xfs", it, 20.0 + it / 10)
    # the 4th xfs round failed half way: its first task's time is stored, partial
    _tasks_unit(store, run_id, "xfs", 4, 1.0, "failed", "StepFailed: cp: No space left on device")
    _tasks_unit(store, run_id, "ext4", 4, 10.4)
    yield store, run_id
    store.close()


def test_every_record_of_a_failed_unit_is_left_out_even_with_its_own_case(tasks_store):
    store, run_id = tasks_store
    loaded = load(store, [run_id], regression=False)
    assert loaded.failed_units == ["xfs tasks:fileserver #4: StepFailed: cp: No space left on device"]
    xfs = loaded.records[loaded.records["fs"] == "xfs"]
    assert sorted(set(xfs["iteration"])) == [1, 2, 3] and 1.0 not in set(xfs["value"])
    n = loaded.analysis.summary.set_index(["case", "level"])["n"]
    assert n[("03-copy-iso", "xfs")] == 3 and n[("03-copy-iso", "ext4")] == 4
    # the units that finished keep every record
    assert len(loaded.records) == 7 * len(TASKS)


def test_a_unit_directory_is_not_the_prefix_of_another(tmp_path):
    """iter-001 is not iter-0010's directory: only the unit's own directory and below."""
    import pandas as pd
    from fslab.results.load import in_dirs
    records = pd.DataFrame({"run_id": ["r", "r", "r", "other", "r"],
                            "artifact": ["a/iter-001", "a/iter-001/fio.json", "a/iter-0010/fio.json",
                                         "a/iter-001/fio.json", None]})
    assert list(in_dirs(records, {("r", "a/iter-001")})) == [True, True, False, False, False]


def test_fios_own_memory_stored_ranked_by_an_earlier_fslab_is_read_unranked(tmp_path):
    store = Store(tmp_path)
    run_id = store.create_run("[run]\n", {})
    for fs, rss in (("ext4", 50e6), ("xfs", 60e6)):
        for it in (1, 2, 3, 4, 5):
            key = UnitKey("localhost", fs, "default", "fio", "randread", "{}", it)
            ms = [Measurement("fio_max_rss", rss + it, "B", "lower", "x"),
                  Measurement("read_iops", 100.0 + it, "ops/s", "higher", "x")]
            store.finish_unit(run_id, key, [stamp(key, run_id, m) for m in ms], "done", None,
                              time.time(), f"runs/{run_id}/{key.slug()}")
    a = load(store, [run_id], regression=False).analysis
    assert set(a.tiers["metric"]) == {"read_iops"}
    assert a.summary.loc[a.summary["metric"] == "fio_max_rss", "better"].isna().all()
    store.close()


def _fio_store(tmp_path, rounds: int, counters=("ext4", "xfs"), environment: dict | None = None):
    """A fio randread case on ext4 and xfs, `rounds` units each; the filesystems in
    `counters` have their device counters as accounting.py stores them (here: ext4's
    reads came from memory)."""
    store = Store(tmp_path)
    run_id = store.create_run("[run]\n", environment or {}, profile="smoke")
    for fs, iops, share in (("ext4", 200.0, 0.1), ("xfs", 100.0, 1.0)):
        for it in range(1, rounds + 1):
            key = UnitKey("localhost", fs, "default", "fio", "randread",
                          '{"workload":"randread"}', it)
            rel = f"runs/{run_id}/{key.slug()}"
            value = iops * (1 + (-1) ** it * 0.01 * it)
            ms = [Measurement("read_iops", value, "ops/s", "higher", f"{rel}/fio.json"),
                  Measurement("read_bw", value * 4096, "B/s", "higher", f"{rel}/fio.json")]
            if fs in counters:
                ms += [Measurement("device_read_bytes", value * 4096 * share, "B", None,
                                   f"{rel}/fio.json"),
                       Measurement("device_read_share", share, "ratio", None, f"{rel}/fio.json")]
            store.finish_unit(run_id, key, [stamp(key, run_id, m) for m in ms], "done", None,
                              time.time(), rel)
    return store, run_id


def test_assumption_checks_show_no_p_values_below_five_values_per_level(tmp_path):
    from fslab.report import export
    from fslab.report.html import render_html
    for rounds, shown in ((3, False), (6, True)):
        store, run_id = _fio_store(tmp_path / str(rounds), rounds)
        loaded = load(store, [run_id], regression=False)
        md = export.markdown(loaded)
        table = md.split("## Assumption checks", 1)[1]
        rows = [r for r in table.splitlines() if r.startswith("| fio")]
        assert rows and all(("too few values to check" not in r) == shown for r in rows), table
        cells = rows[0].split(" | ")
        assert (cells[5:7] == ["too few values to check"] * 2) != shown
        if not shown:
            html = tmp_path / f"{rounds}.html"
            render_html(loaded, html, store.root)
            section = html.read_text().split('id="assumptions"', 1)[1].split('id="iterations"')[0]
            assert section.count("<td>too few values to check</td>") == 2 * len(rows)
        [csv] = [p for p in export.write_csv(loaded, tmp_path / f"csv{rounds}") if p.stem == "omnibus"]
        import pandas as pd
        omni = pd.read_csv(csv)
        ranked = omni[omni["better"].notna()]
        assert ranked["levene_p"].notna().all() == shown and ranked["shapiro_p"].notna().all() == shown
        store.close()


@pytest.mark.e2e
@needs_root()
def test_a_job_file_that_fails_leaves_no_job_of_it_in_the_report(state_dir, results, tmp_path):
    """For real: a job file whose second job fails fio's verify (its file was laid out
    without verify headers) fails the unit; the records of its first job, which ran and
    name their own params (job=fine), are not counted in any verdict either."""
    good, bad = tmp_path / "good.fio", tmp_path / "bad.fio"
    good.write_text("[good]\nrw=read\nbs=64k\nsize=4m\n")
    bad.write_text("[global]\nrw=read\nbs=64k\nsize=4m\n[fine]\n[verify]\nverify=crc32c\n")
    run_fslab("run", "--fs", "ext4", "--job", str(good), "--job", str(bad), "--profile", "smoke",
              "-n", "2", "--results", str(results), "--workdir", str(tmp_path / "work"),
              check=False, timeout=300)
    store = Store(results)
    run_id = store.latest_run_id()
    assert {(u["case"], u["status"]) for u in store.units(run_id)} == {("good", "done"),
                                                                       ("bad", "failed")}
    # the store keeps the failed unit's partial numbers (they are raw data) ...
    kept = store.records(run_id)
    assert '{"job":"fine","rw":"read","workload":"bad"}' in set(kept["params"])
    # ... and the report leaves every one of them out, as it says
    out = tmp_path / "report.json"
    run_fslab("report", "--results", str(results), "--json", str(out))
    doc = json.loads(out.read_text())
    assert {r["case"] for r in doc["records"]} == {"good"}
    assert len(doc["failed_units"]) == 2 and all("verify" in f for f in doc["failed_units"])
    assert not any(v["case"] == "bad" for v in doc["verdicts"])
    # fio's own peak memory describes fio, not the filesystem: stored unranked
    rss = kept[kept["metric"] == "fio_max_rss"]
    assert len(rss) and rss["better"].isna().all()
    assert not any(v["metric"] == "fio_max_rss" for v in doc["verdicts"])
    store.close()


def test_every_view_shows_how_adaptive_rounds_ended_and_their_price(tmp_path):
    """What fslab/run/adaptive.py saves for the report: each case's rounds, converged or
    not (or not assessed), and the optional-stopping caveat, in every view."""
    import io
    from rich.console import Console
    from fslab.report import export
    from fslab.report.html import render_html
    from fslab.report.terminal import print_measurement_notes
    from test_adaptive import _store_with
    rounds = _store_with(tmp_path, {"ext4": [10.0, 20.0, 30.0], "xfs": [10.0, 10.1, 10.2]})
    rounds.save()                       # the tasks case is still wide after 3 rounds
    store, run_id = rounds.store, rounds.run_id
    caveat = store.run(run_id)["environment"]["adaptive"]["caveat"]
    loaded = load(store, [run_id], regression=False)

    buf = io.StringIO()
    print_measurement_notes(loaded, Console(file=buf, width=200))
    term = buf.getvalue()
    assert ("adaptive rounds: another round of a case while a 95% CI was wider than ±5.0% of "
            "its mean, 3 to 30 rounds: 0 of 9 cases converged") in term
    assert "tasks:fileserver — 3 rounds, not converged (widest CI ±" in term
    assert ": ext4 04-copy-iso elapsed)" in term
    assert "features:" in term and "not assessed (no ranked throughput, time or latency)" in term
    assert caveat in term.replace("\n", " ")

    md = export.markdown(loaded)
    section = md.split("## Adaptive rounds", 1)[1]
    assert "| tasks:fileserver | 3 | not converged | ±" in section and f"Caveat: {caveat}." in section

    html = tmp_path / "r.html"
    render_html(loaded, html, store.root)
    page = html.read_text()
    assert "Adaptive rounds</h3>" in page and "<td>not converged</td>" in page
    from markupsafe import escape
    assert "features:" in page and escape(f"Caveat: {caveat}.") in page

    out = tmp_path / "r.json"
    export.write_json(loaded, out)
    doc = json.loads(out.read_text())
    tasks = doc["adaptive"]["cases"]["tasks fileserver"]
    assert tasks["rounds"] == 3 and tasks["converged"] is False and doc["adaptive"]["caveat"] == caveat
    store.close()


def test_a_run_with_fixed_rounds_shows_no_adaptive_section(tmp_path):
    from fslab.report import export
    store, run_id = _fio_store(tmp_path, 3)
    loaded = load(store, [run_id], regression=False)
    assert "Adaptive" not in export.markdown(loaded)
    out = tmp_path / "r.json"
    export.write_json(loaded, out)
    assert json.loads(out.read_text())["adaptive"] is None
    store.close()


NOTE = "served from memory? not checked (no device counters in this run)"


def _views(loaded, tmp_path, root=None, html: bool = True) -> dict[str, str]:
    """The answer as the terminal, Markdown and HTML print it, and the JSON document."""
    import io
    from rich.console import Console
    from fslab.report import export
    from fslab.report.html import render_html
    from fslab.report.terminal import print_answer
    buf = io.StringIO()
    print_answer(loaded, Console(file=buf, width=400))
    export.write_json(loaded, tmp_path / "r.json")
    out = {"terminal": buf.getvalue(), "markdown": export.markdown(loaded),
           "json": (tmp_path / "r.json").read_text()}
    if html:    # the slowest view: rendered where the test reads it
        render_html(loaded, tmp_path / "r.html", root or tmp_path)
        out["html"] = (tmp_path / "r.html").read_text()
    return out


def test_a_run_without_device_counters_says_memory_was_not_checked(tmp_path):
    store, run_id = _fio_store(tmp_path, 5, counters=())
    v = _views(load(store, [run_id], regression=False), tmp_path)
    said = f"{NOTE}: every workload that moved data"
    assert said in v["terminal"]
    assert f"**S{said[1:]}.**" in v["markdown"]
    assert f'<p class="warn">S{said[1:]}.</p>' in v["html"]
    doc = json.loads(v["json"])
    assert doc["memory_check"] == said
    assert {e["memory_checked"] for e in doc["verdicts"]} == {False}
    assert all(e["memory_bound"] is None for e in doc["verdicts"])
    assert [e["memory_checked"] for e in doc["headline"]] == [False]
    store.close()


def test_a_run_with_device_counters_flags_memory_and_says_nothing_unchecked(tmp_path):
    store, run_id = _fio_store(tmp_path, 5)
    v = _views(load(store, [run_id], regression=False), tmp_path)
    for text in v.values():
        assert "not checked" not in text
    assert "served from memory: ext4 (device saw 10% of the bytes)" in v["terminal"]
    doc = json.loads(v["json"])
    assert doc["memory_check"] is None
    ranked = [e for e in doc["verdicts"] if e["metric"] == "read_iops"]
    assert ranked[0]["memory_checked"] is True and ranked[0]["memory_bound"]["shares"] == {"ext4": 0.1}
    store.close()


def test_only_the_filesystems_without_counters_are_named(tmp_path):
    store, run_id = _fio_store(tmp_path, 5, counters=("ext4",))
    v = _views(load(store, [run_id], regression=False), tmp_path, html=False)
    # the run has counters (ext4's): it is these numbers that have none
    assert ("served from memory? not checked (no device counters beside these numbers): "
            "fio:randread (xfs)") in v["terminal"]
    assert json.loads(v["json"])["verdicts"][0]["memory_checked"] is False
    store.close()


def test_imported_fio_json_says_memory_was_not_checked(tmp_path):
    from corpus_data import s2_layout
    from fslab.fio.importer import import_path
    s2_layout(tmp_path / "s2")
    store = Store(tmp_path / "results")
    run_id = import_path(store, tmp_path / "s2", log=lambda line: None).run_id
    v = _views(load(store, [run_id], regression=False), tmp_path, html=False)
    assert f"{NOTE}: every workload that moved data" in v["terminal"]
    store.close()
