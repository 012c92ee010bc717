"""A run's environment through its type (fslab/store/environment.py): a real run's, an old
store's (keys missing), a guest run's, and the readers that ask it."""
from __future__ import annotations

import json
from pathlib import Path

from fslab.store.environment import RunEnvironment

REAL = Path(__file__).parent / "data" / "claims" / "s1-smoke-ext4-zfs-fuse.json"


def real_run() -> dict:
    return json.loads(REAL.read_text())["run"]


def test_a_real_runs_environment_answers_its_readers_questions():
    env = RunEnvironment.of_run(real_run())
    # the level's own record wins over the host's tool (the claims bug looked elsewhere)
    assert env.implementation("zfs:dedup") == "zfs-fuse 0.7.0 (FUSE daemon)"
    assert env.implementation("ext4") == ""
    assert env.recorded_implementations() == {"zfs:dedup": "zfs-fuse"}
    assert env.host_implementations() == {"zfs": "zfs-fuse 0.7.0 (FUSE daemon)"}
    assert env.page_cache in ("off", "on")
    assert env.profile_scaled and env.profile["name"] == "smoke"
    assert env.target_kind == "loop" and env.tools["fio"].startswith("fio-")
    assert not env.emulated and env.guest == {} and env.adaptive is None
    # what compare sets side by side, typed (it read them by key)
    assert env.hostname and env.kernel and env.cpus >= 1 and env.memory_total > 0
    assert list(env.host_facts())[:2] == ["kernel", "OS"] and env.profile_name == "smoke"


def test_the_load_as_the_run_started_is_typed():
    from fslab.store.environment import HostLoad, environments_of
    env = RunEnvironment.of({"load": {"loadavg": [3.5, 2.0, 1.0],
                                      "cpu_pressure_some": {"avg10": 12.0, "avg60": 4.0}}})
    assert env.load == HostLoad(cpu_pressure_avg10=12.0, loadavg_1min=3.5)
    assert RunEnvironment.of({"load": {}}).load == HostLoad(None, None)   # no PSI, no loadavg
    assert RunEnvironment.from_json(b'{"kernel": "6.1"}').kernel == "6.1"
    runs = [{"run_id": "b", "environment": {"kernel": "b"}}, {"run_id": "a", "environment": None}]
    assert [(k, e.kernel) for k, e in environments_of(runs).items()] == [("b", "b"), ("a", "")]


def test_an_old_stores_environment_reads_as_unknown_not_as_an_error():
    for stored in (None, {}, {"hostname": "h", "tools": None, "filesystems": {"ext4": None}}):
        env = RunEnvironment.of(stored)
        assert env.page_cache is None and env.implementation("zfs") == ""
        assert env.cache_policy("ext4") is None and env.daemons == []
        assert env.in_effect("ext4") == {} and env.probed_in_effect("ext4") == {}
        assert env.job_files == {} and env.hosts == [] and env.hosts_toml is None
        assert env.target_kind == "loop" and not env.profile_scaled
        assert env.load is None and env.cpus == 1 and env.memory_total is None
        assert env.workloads == {} and env.profile_name is None and env.kernel == ""


def test_a_guest_and_a_host_tool_answer_where_the_numbers_come_from():
    env = RunEnvironment.of({"guest": {"label": "tcg", "emulated": True},
                             "tools": {"zfs implementation": "OpenZFS 2.3.2 kernel module"},
                             "filesystems": {"zfs": {"cache_policy": "direct I/O",
                                                     "daemon": "zfs-fuse"}},
                             "multihost": {"hosts": {"b": {}, "a": {}}}})
    assert env.emulated and env.implementation("zfs:x") == "OpenZFS 2.3.2 kernel module"
    assert env.cache_policy("zfs") == "direct I/O" and env.daemons == ["zfs-fuse"]
    assert env.hosts == ["b", "a"]


def test_the_readers_take_the_stored_dict_or_the_type_alike():
    from fslab.report.claims import evaluate
    from fslab.results.provenance import measured_where, recorded_implementations
    from fslab.fio.cachepolicy import describe_run
    from fslab.store.environment import environments_of
    run = real_run()
    env = run["environment"]
    assert describe_run(env) == describe_run(RunEnvironment.of(env))
    assert recorded_implementations(environments_of([run])) == {"zfs:dedup": "zfs-fuse"}
    assert measured_where(environments_of([run]))[0].startswith("zfs here is zfs-fuse 0.7.0")
    import pandas as pd
    assert evaluate(pd.DataFrame(), env) == evaluate(pd.DataFrame(), RunEnvironment.of(env)) == []
