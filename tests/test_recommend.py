"""Recommendations from evidence.

Unit part: real fio outputs from the shared corpus, parsed by fslab's own parser and scaled
per filesystem the way issue 12's run measured them (ext4 = xfs, btrfs 0.05x, zfs 0.014x),
stored in a real store and analysed by fslab.analysis: a fio-only run gives no file-server or
data-integrity winner, documented or probed features never decide, a job's IOPS and bandwidth
are one vote, CPU is scored only per operation, and `recommend --json` has its documented shape.

E2E part: a real smoke run of ext4 and zfs (fio randwrite + two feature probes, 6 rounds so a
consistent difference can reach p < 0.05); every point cites a stored record or a feature."""
from __future__ import annotations

import json
import re
import math
import os
import sqlite3

import orjson
import pytest

from conftest import fslab_in_process, leftovers, needs_root, run_fslab
from corpus_data import CORPUS
from fslab.fio.parse import job_measurements
from fslab.recommend import BUILTIN, Priorities, recommend, recommend_run
from fslab.recommend.evidence import gather
from fslab.recommend.measures import measure_of
from fslab.recommend.render import first_text, html, markdown
from fslab.records import Record, canonical_params
from fslab.store import Store

# issue 12's quick run: random write ext4 ~ xfs ~250 k ops/s, btrfs 20x and zfs 70x slower
# the tests share a module-wide fixture: one worker runs them all and makes it once
pytestmark = pytest.mark.xdist_group("test_recommend")

SPEED = {"ext4": 1.0, "xfs": 1.0, "btrfs": 0.05, "zfs": 0.014}
# per-round jitter: ext4 and xfs interleave (no test can separate them), the others are far off
JITTER = {"ext4": [0, .02, .04, .01, .03, .05], "xfs": [.01, .03, .05, 0, .02, .04],
          "btrfs": [0, .01, .02, .03, .04, .05], "zfs": [0, .01, .02, .03, .04, .05]}
JOBS = {"randwrite": "12_ocs-ci_fio-3.7.json", "randread": "01_yardstick_fio-2.1.3.json",
        "mixed": "30_SO-Kernel-trace-extraction_fio-3.36.json"}
# S0's efficiency, system-wide: zfs-fuse's daemon makes each operation expensive
OPS_PER_CPU_S = {"ext4": 9000.0, "xfs": 8800.0, "btrfs": 2500.0, "zfs": 400.0}


def _fio_records(run_id: str) -> list[Record]:
    out = []
    for case, name in JOBS.items():
        (job,) = job_measurements(json.loads((CORPUS / name).read_text()))
        params = canonical_params({"workload": case})
        for fs, speed in SPEED.items():
            for it, j in enumerate(JITTER[fs], start=1):
                def rec(metric, value, unit, better):
                    return Record(run_id, "localhost", fs, "default", "fio", case, params, it,
                                  metric, value, unit, better, None, float(it))
                for m in job.measurements:
                    if m.unit in ("ops/s", "B/s"):
                        value = m.value * speed * (1 + j)
                    elif m.unit == "ns":
                        value = m.value / speed * (1 + j)
                    elif m.metric in ("usr_cpu", "sys_cpu"):
                        # what fio sees: zfs-fuse's work runs in its daemon, so fio looks cheap
                        value = m.value * (0.2 if fs == "zfs" else 1) * (1 + j)
                    else:
                        value = m.value
                    out.append(rec(m.metric, value, m.unit, m.better))
                # the CPU share of a fixed-time job, as stores before better=None wrote it
                out.append(rec("cpu_busy_system_wide", (20 if fs == "zfs" else 60) * (1 + j), "%", "lower"))
                out.append(rec("fio_rusage_cpu", (0.2 if fs == "zfs" else 1.5) * (1 + j), "s", "lower"))
                out.append(rec("ops_per_cpu_second", OPS_PER_CPU_S[fs] * (1 + j), "ops/s per CPU-s", "higher"))
    return out


def _tasks_records(run_id: str) -> list[Record]:
    """S3-like file-server tasks: btrfs 2x and zfs 8x slower than ext4 and xfs to get the data
    on disk, though zfs's `sync` after the task is the quickest (it paid during the task)."""
    slow = {"ext4": 1.0, "xfs": 1.0, "btrfs": 2.0, "zfs": 8.0}
    sync = {"ext4": 5.0, "xfs": 5.0, "btrfs": 3.0, "zfs": 0.5}
    return [Record(run_id, "localhost", fs, "default", "tasks", task, "{}", it, metric, value, unit,
                   better, None, float(it))
            for task in ("06-copy-tree", "10-find") for fs, f in slow.items()
            for it, j in enumerate(JITTER[fs], start=1)
            for metric, value, unit, better in (("elapsed", 10 * f * (1 + j), "s", "lower"),
                                                ("writeback", sync[fs] * (1 + j), "s", "lower"),
                                                ("cpu_percent", 90 / f, "%", "lower"))]


def _probe_records(run_id: str) -> list[Record]:
    """Feature probes that saw snapshots and data checksums work on btrfs and zfs only."""
    return [Record(run_id, "localhost", fs, "default", "features", feature, "{}", 1, "verified",
                   1.0 if fs in ("btrfs", "zfs") else 0.0, "bool", None, None, 1.0)
            for feature in ("snapshots", "data_checksums") for fs in SPEED]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Two stores: one with a fio-only run and a fio + file-server tasks run; one with a
    fio + probes run (kept apart: a store's probes also serve its other runs' matrices)."""
    if not CORPUS.is_dir():
        pytest.skip(f"fio corpus not found at {CORPUS} (set FSLAB_CORPUS)")
    base = tmp_path_factory.mktemp("recommend-unit")
    stores = {"plain": Store(base / "plain"), "probed": Store(base / "probed")}
    runs = {}
    for name, where, extra in (("fio", "plain", []), ("tasks", "plain", [_tasks_records]),
                               ("probed", "probed", [_probe_records])):
        st = stores[where]
        run_id = st.create_run("[run]\n", {}, name=name, status="done")
        st.add_records([*_fio_records(run_id), *(r for f in extra for r in f(run_id))])
        runs[name] = (st, run_id)
    yield runs
    for st in stores.values():
        st.close()


@pytest.fixture(scope="module")
def fio_evidence(store):
    """The fio-only run's evidence, gathered once (a load and an analysis): recommend() only
    reads it, and the tests below score the one Evidence under many priorities."""
    return gather(*store["fio"])


def _own(name: str, *criteria: dict) -> Priorities:
    return Priorities(name=name, criterion=list(criteria))


def test_fio_only_run_has_no_file_server_or_integrity_winner(fio_evidence):
    ev = fio_evidence
    for profile, suites in (("file-server", {"tasks", "capacity", "smallfiles"}),
                            ("data-integrity", {"integrity", "enospc"})):
        rec = recommend(ev, BUILTIN[profile])
        assert rec.first is None and first_text(rec).startswith("no winner")
        assert all(math.isnan(r.score) for r in rec.ranking)
        assert rec.paragraph.startswith(f"No winner for {profile} priorities")
        out = rec.as_dict()
        assert {n["suite"] for n in out["not_measured"]} == suites
        for n in out["not_measured"]:
            assert n["message"] == f"not measured: run `--suite {n['suite']}` to answer it"
        # documented features are listed with their weight, never scored
        caps = {c["criterion"]: c for c in out["capabilities"]}
        assert caps["snapshots"]["scored"] is False and caps["snapshots"]["weight"] > 0
        snap = {p["level"]: (p["value"], p["probed"]) for p in caps["snapshots"]["levels"]}
        assert snap == {"btrfs": (1.0, False), "zfs": (1.0, False), "ext4": (0.0, False),
                        "xfs": (0.0, False)}
        assert "documented, not probed" in rec.paragraph
        for text in (markdown(rec), html(rec)):
            assert f"run `--suite {sorted(suites)[0]}` to answer it" in text
            assert "not scored" in text and "snapshots" in text


def test_probed_features_do_not_decide_either(store):
    st, run_id = store["probed"]
    rec = recommend(gather(st, run_id), BUILTIN["data-integrity"])
    assert rec.first is None
    checks = next(c for c in rec.capabilities if c.criterion.feature == "data_checksums")
    assert {p["level"]: p["basis"] for p in checks.points} == {
        "btrfs": "verified here", "zfs": "verified here",
        "ext4": "absent (probed)", "xfs": "absent (probed)"}
    assert all(p["records"]["run_id"] == run_id for p in checks.points)
    assert "probed here" in rec.paragraph and "not scored" in rec.paragraph


def test_features_never_change_a_measured_ranking(fio_evidence):
    """A heavy feature next to one measured criterion: the order is the measured one."""
    ev = fio_evidence
    iops = {"label": "random IOPS", "weight": 1, "suite": "fio", "case": "rand*",
            "metric": ["read_iops", "write_iops"]}
    snaps = {"label": "snapshots", "weight": 100, "feature": "snapshots"}
    measured = recommend(ev, _own("iops", iops))
    with_feature = recommend(ev, _own("iops+snapshots", iops, snaps))
    assert measured.first == with_feature.first == ["ext4", "xfs"]
    assert [(r.level, r.score) for r in measured.ranking] == \
        [(r.level, r.score) for r in with_feature.ranking]
    assert with_feature.ranking[-1].level == "zfs"
    # only a feature: no winner at all
    assert recommend(ev, _own("snapshots only", snaps)).first is None


def test_file_server_ranks_on_measured_tasks_not_snapshots(store):
    """Issue 12's case: btrfs and zfs documented with snapshots, but slower at every task."""
    rec = recommend(gather(*store["tasks"]), BUILTIN["file-server"])
    assert rec.first == ["ext4", "xfs"], rec.paragraph
    tasks = next(c for c in rec.criteria if c.criterion.label == "file-server tasks")
    # a task's elapsed time and its sync are one measure, scored as their sum per round;
    # the tasks' CPU percent (fixed work, CPU share) is not scored
    assert {p["metric"] for p in tasks.points} == {"elapsed_with_writeback"}
    assert all(set(p["records"]["metrics"]) == {"elapsed", "writeback", "elapsed_with_writeback"}
               for p in tasks.points)
    assert tasks.groups == 2                           # two tasks, each counted once
    # a point is one filesystem's step below the best tier, on one task
    assert len(tasks.points) == len({(p["case"], p["loser"]) for p in tasks.points})
    assert not {p["loser"] for p in tasks.points} & {"ext4", "xfs"}
    assert "zfs" not in {p["winner"] for p in tasks.points}
    assert rec.as_dict()["measured_weight"] == 4 and rec.as_dict()["profile_weight"] == 11
    assert "Only file-server tasks was measured: weight 4 of the profile's 11" in rec.paragraph


def test_iops_and_bandwidth_of_a_job_count_once(fio_evidence):
    ev = fio_evidence
    both = recommend(ev, _own("both", {"label": "throughput", "weight": 1, "suite": "fio",
                                       "metric": ["*_iops", "*_bw"]}))
    iops = recommend(ev, _own("iops", {"label": "throughput", "weight": 1, "suite": "fio",
                                       "metric": ["*_iops"]}))
    b, i = both.criteria[0], iops.criteria[0]
    # one measure per job: 3 jobs (the mixed job's reads and writes are one measure too)
    assert b.groups == i.groups == len(JOBS)
    assert len(b.points) == len(i.points) and b.ties == i.ties
    assert b.scores == pytest.approx(i.scores)   # IOPS and bandwidth give one ratio
    point = next(p for p in b.points if p["case"] == "mixed")
    assert set(point["records"]["metrics"]) == {"read_iops", "read_bw", "write_iops", "write_bw"}
    # a second criterion over the same measures adds nothing: already counted
    twice = recommend(ev, _own("twice", {"label": "IOPS", "weight": 1, "suite": "fio",
                                         "metric": ["*_iops"]},
                               {"label": "bandwidth", "weight": 1, "suite": "fio", "metric": ["*_bw"]}))
    assert twice.criteria[1].status == "counted before" and not twice.criteria[1].scores
    assert [r.score for r in twice.ranking] == [r.score for r in iops.ranking]
    assert measure_of("read_clat_p99") == measure_of("read_lat_p99") != measure_of("read_clat_mean")


def test_cpu_is_scored_only_per_operation(fio_evidence):
    ev = fio_evidence
    rec = recommend(ev, BUILTIN["resource-constrained"])
    cpu = next(c for c in rec.criteria if c.criterion.label == "CPU cost per operation")
    assert cpu.status == "measured" and {p["metric"] for p in cpu.points} == {"ops_per_cpu_second"}
    assert min(cpu.scores, key=cpu.scores.get) == "zfs"
    # a catch-all criterion over fio never scores fio's CPU share / CPU time, though the
    # records (as older stores wrote them) say "lower is better" and make zfs look cheapest
    everything = recommend(ev, _own("all fio", {"label": "all", "weight": 1, "suite": "fio",
                                                "metric": ["*"]}))
    metrics = {p["metric"] for p in everything.criteria[0].points}
    assert metrics and not {m for m in metrics if "cpu" in m} - {"ops_per_cpu_second"}
    for profile in BUILTIN.values():
        for c in recommend(ev, profile).measured:
            assert all("cpu" not in p["metric"] or p["metric"] == "ops_per_cpu_second"
                       for p in c.points), (profile.name, c.criterion.label)


def test_every_point_links_to_its_records(store):
    st, run_id = store["tasks"]
    rec = recommend_run(st, run_id, "random-io")
    assert rec.first == ["ext4", "xfs"]
    for c in rec.measured:
        for p in c.points:
            src = p["records"]
            n = st.db.execute('SELECT COUNT(*) FROM records WHERE run_id=? AND suite=? AND "case"=? '
                              "AND params=? AND metric=? AND fs IN (?, ?)",
                              (src["run_id"], src["suite"], src["case"], src["params"], src["metric"],
                               *src["levels"])).fetchone()[0]
            assert n == 2 * len(JITTER["ext4"]), p
            assert p["significant"] and p["p_holm"] < 0.05


def test_recommend_json_shape(store):
    st, run_id = store["fio"]
    p = fslab_in_process("recommend", run_id, "--priorities", "file-server", "--json",
                         "--results", str(st.root))
    server = json.loads(p.stdout)
    assert list(server)[:7] == ["fslab", "schema", "measured_where", "priorities", "first",
                                "ranking", "not_measured"]
    assert server["priorities"] == "file-server" and server["first"] is None
    assert {r["level"] for r in server["ranking"]} == set(SPEED)
    assert all(r["score"] is None and r["rank"] is None for r in server["ranking"])
    assert [n["criterion"] for n in server["not_measured"]] == ["file-server tasks", "capacity",
                                                                "small files"]
    # the same writer in-process, for a profile the fio run does answer
    fast = json.loads(orjson.dumps(recommend_run(st, run_id, "random-io").as_dict(),
                                   option=orjson.OPT_SERIALIZE_NUMPY))
    assert fast["first"] == ["ext4", "xfs"] and fast["not_measured"] == []
    assert [r["level"] for r in fast["ranking"]][-1] == "zfs"
    assert fast["measured_weight"] == fast["profile_weight"] == 11


PLAN = """
[run]
profile = "smoke"
iterations = 6
seed = 7

[[filesystem]]
name = "ext4"

[[filesystem]]
name = "zfs"

[[suite]]
kind = "fio"
workloads = ["randwrite"]

[[suite]]
kind = "features"
workloads = ["checksum", "snapshot"]
"""


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root to create loop devices and mount")
    base = tmp_path_factory.mktemp("recommend")
    env = {"FSLAB_STATE_DIR": str(base / "state")}
    (base / "plan.toml").write_text(PLAN)
    results = base / "results"
    run_fslab("run", str(base / "plan.toml"), "--results", str(results),
              "--workdir", str(base / "work"), env=env)
    assert not leftovers(str(base))
    run_id = sqlite3.connect(results / "fslab.sqlite").execute("SELECT run_id FROM runs").fetchone()[0]
    return results, run_id, env


def _recommend(smoke_run, priorities: str) -> dict:
    results, run_id, env = smoke_run
    p = run_fslab("recommend", run_id, "--priorities", priorities, "--json",
                  "--results", str(results), env=env)
    return json.loads(p.stdout)


def _cited_records_exist(rec: dict, db: sqlite3.Connection) -> None:
    for c in rec["criteria"]:
        for p in c["points"]:
            src = p["records"]
            if c["kind"] == "measured":
                n = db.execute("SELECT COUNT(*) FROM records WHERE run_id=? AND suite=? AND \"case\"=? "
                               "AND params=? AND fs IN (?, ?)",
                               (src["run_id"], src["suite"], src["case"], src["params"],
                                *src["levels"])).fetchone()[0]
                # the derived ops-per-CPU value comes from these records' iops and CPU
                assert n > 0, p
                assert p["p_holm"] < 0.05 and p["significant"], p
            elif src is not None:
                n = db.execute("SELECT COUNT(*) FROM records WHERE run_id=? AND suite='features' "
                               "AND \"case\"=? AND metric='verified' AND fs=?",
                               (src["run_id"], src["case"], p["level"])).fetchone()[0]
                assert n > 0, p
            else:
                assert p["claim"]["ref"], p   # unverified: at least the documentation it cites


@pytest.mark.e2e
@needs_root()
def test_priorities_change_the_answer(smoke_run):
    results = smoke_run[0]
    lean = _recommend(smoke_run, "resource-constrained")
    safe = _recommend(smoke_run, "data-integrity")
    db = sqlite3.connect(results / "fslab.sqlite")
    for rec in (lean, safe):
        _cited_records_exist(rec, db)
        assert {r["level"] for r in rec["ranking"]} == {"ext4", "zfs"}
    # data integrity: probes verified zfs's checksums and snapshots here, but with no
    # integrity/enospc suite in the run nothing measured decides: no winner
    assert safe["first"] is None and safe["paragraph"].startswith("No winner for data-integrity")
    checks = next(c for c in safe["capabilities"] if c["criterion"] == "data checksums")
    assert {p["level"]: p["basis"] for p in checks["levels"]} == {"zfs": "verified here",
                                                                "ext4": "absent (probed)"}
    assert checks["scored"] is False and "probed here" in safe["paragraph"]
    assert {n["suite"] for n in safe["not_measured"]} == {"integrity", "enospc"}
    # resource-constrained: fio throughput is measured here; CPU per operation is scored
    # from ops_per_cpu_second when the run recorded it, else listed as not measured
    assert lean["first"] and lean["paragraph"].startswith("For resource-constrained priorities")
    cpu = next(c for c in lean["criteria"] if c["label"] == "CPU cost per operation")
    has_cpu = db.execute("SELECT COUNT(*) FROM records WHERE metric='ops_per_cpu_second'").fetchone()[0]
    assert cpu["status"] == ("measured" if has_cpu else "not measured")
    if cpu["points"]:   # a real difference reached significance: it must drive the answer
        winner = cpu["points"][0]["winner"]
        assert winner in lean["first"] or len(lean["first"]) == 2
        assert "CPU cost per operation" in lean["paragraph"] and winner in lean["paragraph"]
    assert all(p["metric"] == "ops_per_cpu_second" for p in cpu["points"])


@pytest.mark.e2e
@needs_root()
def test_scores_follow_the_verdicts(smoke_run):
    rec = _recommend(smoke_run, "random-io")
    for c in rec["criteria"]:
        if c["status"] != "measured":
            continue
        # 1 = the best tier on every measure; a step down never scores above the best
        assert all(0 <= s <= 1 for s in c["scores"].values())
        for p in c["points"]:
            assert c["scores"][p["winner"]] >= c["scores"][p["loser"]], (c["label"], p)
        if not c["points"]:   # all in one tier everywhere: nobody is separated
            assert set(c["scores"].values()) == {1.0}, c
    total = {r["level"]: r["score"] for r in rec["ranking"]}
    for lv, score in total.items():
        used = [(c["weight"], c["scores"][lv]) for c in rec["criteria"]
                if c["status"] == "measured" and lv in c["scores"]]
        assert math.isclose(score, round(100 * sum(w * s for w, s in used) / sum(w for w, _ in used), 1))


@pytest.mark.e2e
@needs_root()
def test_user_priorities_file_and_markdown(smoke_run, tmp_path):
    results, run_id, env = smoke_run
    mine = tmp_path / "mine.toml"
    mine.write_text('name = "snapshots only"\n[[criterion]]\nlabel = "snapshots"\nweight = 1\n'
                    'feature = "snapshots"\n')
    p = run_fslab("recommend", run_id, "-p", str(mine), "--markdown", "--results", str(results), env=env)
    assert "# Recommendation — priorities: snapshots only" in p.stdout
    assert "zfs: yes — verified here" in p.stdout and "ext4: no — absent (probed)" in p.stdout
    assert "**First: no winner" in p.stdout     # a feature alone never makes a winner
    bad = tmp_path / "bad.toml"
    bad.write_text('[[criterion]]\nlabel = "x"\nweight = 1\n')
    p = run_fslab("recommend", run_id, "-p", str(bad), "--results", str(results), env=env, check=False)
    assert p.returncode != 0 and "bad.toml" in p.stderr and "metric" in p.stderr


@pytest.mark.e2e
@needs_root()
def test_report_opens_with_the_recommendation(smoke_run, tmp_path):
    results, run_id, env = smoke_run
    out = tmp_path / "report.html"
    run_fslab("report", run_id, "--html", str(out), "--results", str(results), env=env)
    page = out.read_text()
    # the answer first (one tier line per workload), its decision figure, the options
    # compared, then the recommendation: one profile in full, the others in a line
    assert re.findall(r'<h2 id="([^"]+)"', page)[:4] == ["answer", "decision", "options", "lead-1"]
    assert page[page.index('<h2 id="lead-1"'):].startswith('<h2 id="lead-1">Recommendation')
    assert page.count("evidence behind every point") == 1
    assert "data-integrity" in page and "resource-constrained" in page
    assert "Feature matrix" in page and "verified" in page


@pytest.mark.e2e
@needs_root()
def test_recommend_says_what_zfs_is_as_the_report_does(smoke_run, tmp_path):
    """zfs-fuse is not kernel OpenZFS: `recommend` (terminal and --json) says so before any
    ranking, in the words the report's banner uses."""
    results, run_id, env = smoke_run
    from fslab.results.provenance import measured_where
    from fslab.store.db import Store
    from fslab.store.environment import environments_of
    store = Store(results)
    try:
        lines = measured_where(environments_of([store.run(run_id)]))
    finally:
        store.close()
    rec = _recommend(smoke_run, "random-io")
    assert rec["measured_where"] == lines
    terminal = run_fslab("recommend", run_id, "--priorities", "random-io", "--results",
                         str(results), env=env).stdout
    if any("zfs-fuse" in line for line in lines):     # the host's zfs is the FUSE daemon
        assert "O_DIRECT skips the kernel's page cache" in " ".join(terminal.split())
        assert terminal.index("Measured:") < terminal.index("fslab recommend")


def test_scores_follow_the_size_of_the_difference_not_only_its_sign():
    """Issue 12: 0.98x of the best counts nearly as the best, 0.014x almost nothing, and
    filesystems the tests cannot tell apart score alike."""
    import pandas as pd
    from fslab.analysis import analyze
    from fslab.recommend.evidence import Evidence
    from fslab.records import RECORD_COLUMNS
    speed = {"ext4": 250e3, "xfs": 250.2e3, "btrfs": 12.5e3, "zfs": 3.5e3}
    wobble = {"ext4": [0, 3, 1, 6, 2, 7, 4, 5], "xfs": [5, 1, 7, 0, 4, 2, 6, 3]}
    rows = [{"run_id": "r", "host": "h", "fs": fs, "variant": "default", "suite": "fio",
             "case": "randwrite", "params": "{}", "iteration": i + 1, "metric": "write_iops",
             "value": v * (1 + 0.002 * wobble.get(fs, range(8))[i]), "unit": "ops/s",
             "better": "higher", "artifact": None, "ts": 0.0}
            for fs, v in speed.items() for i in range(8)]
    recs = pd.DataFrame(rows, columns=RECORD_COLUMNS)
    a = analyze(recs, regression=False)
    ev = Evidence(run_id="r", analysis=a, matrix=None, features_run=None, records=recs)
    rec = recommend(ev, _own("iops", {"label": "random write IOPS", "weight": 1,
                                      "suite": "fio", "metric": ["write_iops"]}))
    sc = rec.criteria[0].scores
    assert sc["ext4"] == sc["xfs"] == 1.0
    best = max(speed["ext4"], speed["xfs"])
    assert sc["btrfs"] == pytest.approx(speed["btrfs"] / best, rel=0.02)   # 0.05
    assert sc["zfs"] == pytest.approx(speed["zfs"] / best, rel=0.02)       # 0.014
    assert rec.first == ["ext4", "xfs"] or rec.first == ["xfs", "ext4"]


def test_a_best_of_zero_scores_as_the_best():
    """Issue 26 item 5: 0 silently corrupted blocks is the best there is. The ratio to a best
    of 0 was NaN and every filesystem, the winner included, scored 0 on the criterion. Now
    the best tier scores 1; behind it, counts of trials (tested pooled) score 1 minus the
    rate difference, and other metrics 0 (the limit of an infinite ratio)."""
    import pandas as pd
    from fslab.analysis import analyze
    from fslab.recommend.evidence import Evidence
    from fslab.records import RECORD_COLUMNS
    from fslab.results.load import declared_trials
    silent = {"ext4": 8, "btrfs": 3, "zfs": 0}           # of 8 damaged blocks, every round
    collateral = {"ext4": [2, 3, 2, 3, 2, 3], "btrfs": [0] * 6, "zfs": [0] * 6}

    def rec(fs, it, metric, value, better):
        return {"run_id": "r", "host": "h", "fs": fs, "variant": "default", "suite": "integrity",
                "case": "data", "params": "{}", "iteration": it, "metric": metric,
                "value": float(value), "unit": "count", "better": better, "artifact": None, "ts": 0.0}
    rows = [r for fs in silent for it in range(1, 5)
            for r in (rec(fs, it, "damaged", 8, None), rec(fs, it, "silent", silent[fs], "lower"))]
    rows += [rec(fs, it, "collateral_damage", v, "lower")
             for fs, vs in collateral.items() for it, v in enumerate(vs, start=1)]
    recs = pd.DataFrame(rows, columns=RECORD_COLUMNS)
    a = analyze(recs, regression=False, trials=declared_trials(recs))
    ev = Evidence(run_id="r", analysis=a, matrix=None, features_run=None, records=recs)
    rec_ = recommend(ev, _own("integrity",
                              {"label": "silent", "weight": 1, "suite": "integrity", "metric": ["silent"]},
                              {"label": "collateral", "weight": 1, "suite": "integrity",
                               "metric": ["collateral_damage"]}))
    by_silent, by_collateral = (c.scores for c in rec_.criteria)
    assert by_silent == {"zfs": 1.0, "btrfs": pytest.approx(1 - 12 / 32), "ext4": 0.0}
    assert by_collateral == {"zfs": 1.0, "btrfs": 1.0, "ext4": 0.0}
    assert rec_.first == ["zfs"]
    (point,) = [p for p in rec_.criteria[0].points if p["loser"] == "btrfs"]
    assert point["winner"] == "zfs" and point["design"] == "pooled trials" and point["n"] == 32
    assert "(0% vs 37.5%)" in markdown(rec_)


def test_a_job_files_randrw_job_answers_random_io(tmp_path):
    """A job file is named after its file ('db'), not 'rand*': its random read/write job
    counts for random IOPS by the rw= it declares (issue 29: it said 'not measured')."""
    from pathlib import Path
    from fslab.fio.parse import declared_io, load_fio_output
    recorded = Path(__file__).parent / "data" / "fio-oltp-fsync8-logappend-fdatasync.json"
    jobs = job_measurements(load_fio_output(recorded.read_bytes()))
    st = Store(tmp_path / "store")
    run_id = st.create_run("[run]\n", {}, name="db", status="done")
    records = []
    for job in jobs:
        params = canonical_params({"workload": "db", "job": job.job_name, **declared_io(job.options)})
        for fs, speed in (("ext4", 1.0), ("xfs", 0.5)):
            for it, j in enumerate(JITTER[fs], start=1):
                for m in job.measurements:
                    value = m.value * (speed if m.unit in ("ops/s", "B/s") else 1 / speed) * (1 + j)
                    records.append(Record(run_id, "localhost", fs, "default", "fio", "db", params,
                                          it, m.metric, value, m.unit, m.better, None, float(it)))
    st.add_records(records)
    rec = recommend(gather(st, run_id), BUILTIN["random-io"])
    by = {c.criterion.label: c for c in rec.criteria}
    assert by["random IOPS"].status == "measured" and by["random IOPS"].groups == 1   # oltp
    assert by["random IOPS"].points and by["random IOPS"].points[0]["winner"] == "ext4"
    assert by["mixed IOPS"].status == "counted before"   # the same job's IOPS, once
    # the sequential log append is no random job; sequential-throughput counts it
    seq = recommend(gather(st, run_id), BUILTIN["sequential-throughput"])
    assert seq.criteria[0].status == "measured" and seq.criteria[0].groups == 1
    st.close()
