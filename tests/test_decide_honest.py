"""What decide says around its race (issue 36): the metric a job file's jobs really do,
honest advice, labels printed literally, JSON alone on stdout (no mounts here)."""
from __future__ import annotations

import orjson
import pandas as pd

from fslab.decide.policy import choose_measure, race_values
from fslab.fio.parse import declared_group_io
from fslab.workloads.support.jobfile import load

DB = """[global]
ioengine=psync
bs=4k
size=16m
runtime=2
time_based=1
group_reporting=1
numjobs=2

[dbwrite]
rw=randwrite
fsync=1

[dbread]
rw=randread
"""


def test_group_reporting_merges_the_jobs_of_a_group_as_fio_reports_them(tmp_path):
    f = tmp_path / "db.fio"
    f.write_text(DB)
    assert [[n for n, _ in g] for g in load(f).reports()] == [["dbwrite", "dbread"]]
    f.write_text(DB.replace("[dbread]\n", "[dbread]\nstonewall\n"))
    assert [[n for n, _ in g] for g in load(f).reports()] == [["dbwrite"], ["dbread"]]
    f.write_text(DB.replace("group_reporting=1\n", ""))
    assert [[n for n, _ in g] for g in load(f).reports()] == [["dbwrite"], ["dbread"]]


def test_a_merged_group_does_what_its_jobs_do_together(tmp_path):
    f = tmp_path / "db.fio"
    f.write_text(DB)
    (group,) = load(f).reports()
    io = declared_group_io([o for _, o in group])
    assert io == {"rw": "randrw", "rwmixread": 50, "fsync": 1}


def _records(params: dict, metrics: dict[str, tuple[float, str]]) -> pd.DataFrame:
    rows = []
    for fs in ("ext4", "xfs"):
        for it in (1, 2, 3):
            for m, (v, better) in metrics.items():
                rows.append({"suite": "fio", "case": "db", "params": orjson.dumps(params).decode(),
                             "metric": m, "value": v * (2 if fs == "xfs" and m == "write_iops" else 1),
                             "better": better, "fs": fs, "variant": "default", "iteration": it})
    return pd.DataFrame(rows)


def test_a_job_file_that_reads_writes_and_syncs_is_raced_on_all_three():
    # before: the merged entry said rw=randread and the race took read IOPS alone,
    # blind to xfs's writes being twice ext4's
    params = {"job": "dbwrite+dbread", "rw": "randrw", "rwmixread": 50, "fsync": 1}
    recs = _records(params, {"read_iops": (1000, "higher"), "write_iops": (100, "higher"),
                             "sync_lat_p99": (0.002, "lower"), "read_clat_p99": (0.001, "lower")})
    m = choose_measure(recs, None)
    assert set(m.names()) == {"read_iops", "write_iops", "sync_lat_p99"}
    assert m.better == "higher"
    assert "write IOPS" in m.describe() and "read IOPS" in m.describe() and "fsync" in m.describe()
    v = race_values(recs, m)
    assert abs(v["xfs"][1] / v["ext4"][1] - 2 ** (1 / 3)) < 1e-9
