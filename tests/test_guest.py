"""The qemu guest target, for real: build (or reuse) the image, boot it, run fslab inside.

The `guest` tests boot Debian's kernel under qemu (TCG here: KVM hangs on this
CI's hosts) and take a few minutes; the first run also builds the image (~2 min
plus downloads, plus ~6 min for the OpenZFS module on a fresh machine). One guest run
serves several tests: fio smoke on ext4, f2fs, ext2 and kernel OpenZFS, and the crash
suite on the first three (ext2 is its negative control), merged into one host store.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import sigint_as_at_a_terminal
from fslab.guest import initramfs

REPO = Path(__file__).resolve().parents[1]


def _guest_skip_reason() -> str | None:
    from fslab.guest import capable
    return capable()


needs_guest = pytest.mark.skipif(_guest_skip_reason() is not None,
                                 reason=f"guest target unavailable: {_guest_skip_reason()}")


def _qemu_pids(marker: str = "fslab-guest-") -> list[int]:
    out = []
    for cmd in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmd.read_bytes()
        except OSError:
            continue
        if b"qemu-system" in text and marker.encode() in text:
            out.append(int(cmd.parent.name))
    return out


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("state")
    old = os.environ.get("FSLAB_STATE_DIR")
    os.environ["FSLAB_STATE_DIR"] = str(d)
    yield d
    if old is None:
        os.environ.pop("FSLAB_STATE_DIR", None)
    else:
        os.environ["FSLAB_STATE_DIR"] = old


@pytest.fixture(scope="module")
def image(state_dir):
    from fslab.guest import ensure_image
    t0 = time.monotonic()
    img = ensure_image(log=lambda m: print(f"[image] {m}", flush=True))
    print(f"[image] ready in {time.monotonic() - t0:.0f}s: {img.path}")
    return img


# --- host-side pieces, no qemu ------------------------------------------------

def test_static_busybox_detected_by_elf_header():
    # /bin/sh (dash) is dynamically linked on Debian; a static busybox has no PT_INTERP
    assert initramfs._has_interpreter(os.path.realpath("/bin/sh"))
    bb = initramfs.busybox_static()
    if bb:
        assert not initramfs._has_interpreter(bb)


def test_module_order_puts_dependencies_first(tmp_path):
    (tmp_path / "modules.dep").write_text(
        "kernel/fs/ext4/ext4.ko: kernel/lib/crc16.ko kernel/fs/mbcache.ko kernel/fs/jbd2/jbd2.ko\n"
        "kernel/fs/jbd2/jbd2.ko:\nkernel/fs/mbcache.ko:\nkernel/lib/crc16.ko:\n"
        "kernel/drivers/block/virtio_blk.ko: kernel/drivers/virtio/virtio.ko\n"
        "kernel/drivers/virtio/virtio.ko:\n")
    (tmp_path / "modules.builtin").write_text("kernel/crypto/crc32c_generic.ko\n")
    order = initramfs.resolve(tmp_path, ["virtio_blk", "crc32c_generic", "ext4"])
    assert order.index("kernel/drivers/virtio/virtio.ko") < order.index("kernel/drivers/block/virtio_blk.ko")
    assert order[-1] == "kernel/fs/ext4/ext4.ko"
    assert {"kernel/fs/jbd2/jbd2.ko", "kernel/fs/mbcache.ko", "kernel/lib/crc16.ko"} <= set(order)


def test_guest_only_drivers_say_how_they_can_run():
    from fslab import filesystems
    for name in ("f2fs", "jfs", "reiserfs", "nilfs2"):
        a = filesystems.get(name).available()
        if not a.ok:   # a host kernel without it: the guest is the way, or why not
            assert a.how == "via guest" or "guest" in a.why


def test_crash_suite_explains_itself_without_dm_flakey():
    from fslab.workloads.crash import Crash, flakey_available
    why = flakey_available()
    if why is None:
        pytest.skip("this kernel has dm-flakey")
    from fslab import filesystems
    assert "--target guest" in Crash().supports(filesystems.get("ext4"))
    assert Crash().supports(filesystems.get("tmpfs"))


def test_agent_stops_fslab_as_ctrl_c_would_when_the_host_asks(tmp_path):
    """The host's stop file reaches the guest's fslab as SIGINT (a KeyboardInterrupt it
    handles by tearing down and marking its run interrupted), once, and its exit is kept."""
    from fslab.guest.agent import run_until_done_or_stopped
    child = tmp_path / "child.py"
    ready = tmp_path / "ready"
    child.write_text(
        "import sys, time\n"
        "try:\n"
        f"    open({str(ready)!r}, 'w').close()\n"
        "    time.sleep(60)\n"
        "except KeyboardInterrupt:\n"
        f"    open({str(tmp_path / 'tore-down')!r}, 'w').write('yes')\n"
        "    sys.exit(130)\n")
    stop = tmp_path / "stop"

    def ask_once_it_runs():      # the host asks while fslab runs, not before it started
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        stop.write_text("interrupted")
    import threading
    threading.Thread(target=ask_once_it_runs, daemon=True).start()
    t0 = time.monotonic()
    rc = run_until_done_or_stopped([sys.executable, str(child)], dict(os.environ), stop)
    assert rc == 130 and (tmp_path / "tore-down").read_text() == "yes"
    assert time.monotonic() - t0 < 30


def test_agent_lets_fslab_finish_when_nobody_asks_it_to_stop(tmp_path):
    from fslab.guest.agent import run_until_done_or_stopped
    rc = run_until_done_or_stopped([sys.executable, "-c", "import sys; sys.exit(3)"],
                                   dict(os.environ), tmp_path / "stop")
    assert rc == 3


def test_agent_starts_nothing_when_asked_to_stop_during_boot(tmp_path):
    from fslab.guest.agent import run_until_done_or_stopped
    (tmp_path / "stop").write_text("interrupted")
    marker = tmp_path / "ran"
    rc = run_until_done_or_stopped([sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
                                   dict(os.environ), tmp_path / "stop")
    assert rc == 130 and not marker.exists()


def test_the_kept_guest_store_holds_what_its_write_ahead_log_held(tmp_path):
    from fslab.run.guest import _keep_store
    src = tmp_path / "fslab.sqlite"
    db = sqlite3.connect(src)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")      # everything stays in fslab.sqlite-wal
    db.execute("CREATE TABLE runs (run_id TEXT, started REAL)")
    db.execute("INSERT INTO runs VALUES ('20261123-000000-abcd', 1.0)")
    db.commit()
    assert (tmp_path / "fslab.sqlite-wal").stat().st_size > 0
    _keep_store(src, tmp_path / "guest.sqlite")
    db.close()
    kept = sqlite3.connect(tmp_path / "guest.sqlite")
    assert kept.execute("SELECT run_id FROM runs").fetchall() == [("20261123-000000-abcd",)]


def test_merge_rewrites_run_host_and_artifacts(tmp_path):
    """A real guest-shaped store merged into a real host store."""
    from fslab.guest.merge import merge
    from fslab.records import Measurement, UnitKey, stamp
    from fslab.store import Store
    guest = Store(tmp_path / "guest")
    grun = guest.create_run("[run]\n", {"filesystems": {"f2fs": {"fs": "f2fs"}}})
    key = UnitKey("localhost", "f2fs", "default", "fio", "randread", "{}", 1)
    rel = f"runs/{grun}/{key.slug()}"
    (guest.root / rel).mkdir(parents=True)
    (guest.root / rel / "fio.json").write_text("{}")
    rec = stamp(key, grun, Measurement("read_iops", 123.0, "ops/s", "higher", f"{rel}/fio.json"))
    guest.finish_unit(grun, key, [rec], "done", None, time.time(), rel)
    guest.set_status(grun, "finished")
    guest.close()
    host = Store(tmp_path / "host")
    run_id = host.create_run("[run]\n", {})
    for _ in range(2):   # merging twice must not duplicate
        out = merge(host, run_id, tmp_path / "guest", "guest-tcg")
    assert (out["units"], out["records"], out["status"]) == (1, 1, "finished")
    recs = host.records(run_id)
    assert len(recs) == 1 and recs.iloc[0]["host"] == "guest-tcg"
    art = recs.iloc[0]["artifact"]
    assert art.startswith(f"runs/{run_id}/guest-tcg/") and (host.root / art).exists()
    assert host.units(run_id)[0]["artifact_dir"].startswith(f"runs/{run_id}/guest-tcg/")
    # a resumed guest redid the unit: its files replace the partial attempt's whole
    stale = host.root / art.rsplit("/", 1)[0] / "error.txt"
    stale.write_text("from the interrupted attempt")
    keep = host.root / f"runs/{run_id}/guest-tcg/console.log"
    keep.write_text("the host's console log")
    merge(host, run_id, tmp_path / "guest", "guest-tcg")
    assert not stale.exists() and (host.root / art).exists()
    assert keep.read_text() == "the host's console log"


def test_the_host_run_takes_over_what_the_guest_recorded_about_its_suites(tmp_path):
    """S4 smoke in the guest: the guest's environment said which history the aging replayed
    and its cache policy, but the host run kept only tools and filesystems, so its report
    said "page cache off: fio jobs measure the device" for a run without fio, and a
    generated history standing in for the study's would not have been said at all."""
    from fslab.guest.merge import host_environment
    from fslab.results.provenance import stand_in_lines
    from fslab.fio.cachepolicy import describe_run
    from fslab.store import Store
    from fslab.store.environment import environments_of
    aging = {"history": "generated source tree (20000 files, seeded)", "buffered": False,
             "stand_in": "a generated source history (20000 files, seeded) stood in for URL: "
                         "it could not be reached",
             "page_cache": "grep on a cold cache at every policy"}
    guest_env = {"tools": {"zfs implementation": "OpenZFS 2.3.2 kernel module"},
                 "filesystems": {"f2fs": {"fs": "f2fs"}}, "workloads": {"aging:git": aging},
                 "kernel": "6.1.0-56-amd64"}
    host = Store(tmp_path / "host")
    run_id = host.create_run("[run]\n", {"page_cache": "off", "kernel": "6.18"})
    host.update_environment(run_id, {"guest": {"environment": guest_env},
                                     **host_environment(guest_env)})
    run = host.run(run_id)
    env = run["environment"]
    assert env["workloads"]["aging:git"] == aging and env["kernel"] == "6.18"
    assert stand_in_lines(environments_of([run])) == [f"aging:git: {aging['stand_in']}"]
    assert describe_run(env) == ["page cache off: each suite below says what it measured",
                                 "aging: grep on a cold cache at every policy"]


# --- real guests ------------------------------------------------------------------

@pytest.mark.guest
@needs_guest
def test_kvm_probe_falls_back_to_tcg_within_its_timeout(image):
    from fslab.guest import accel
    # qemu64 under this host's KVM hangs in early boot: the probe must give up on time
    others = set(_qemu_pids())   # guests of other fslab runs on this host are not the probe's
    t0 = time.monotonic()
    verdict = accel.probe_kvm(image, timeout=8, cpu="qemu64")
    took = time.monotonic() - t0
    assert took < 8 + 15, f"probe took {took:.0f}s"
    if not verdict["ok"]:
        assert verdict["why"]
    # and the real choice is made, cached for this host boot, and recorded
    chosen = accel.choose(image)
    assert chosen["accel"] in ("kvm", "tcg")
    assert accel.cached_verdict() is None or accel.cached_verdict()["accel"] == chosen["accel"]
    assert not set(_qemu_pids()) - others, "the probe left a qemu process"


GUEST_PLAN = """
[run]
profile = "smoke"
iterations = 1
name = "guest test"

[[filesystem]]
name = "ext4"

[[filesystem]]
name = "f2fs"

[[filesystem]]
name = "ext2"            # no journal: the negative control of the crash suite

[[filesystem]]
name = "zfs"             # kernel OpenZFS in the guest, crash suite included

[[suite]]
kind = "fio"
workloads = ["randwrite", "seqread"]

[[suite]]
kind = "crash"
workloads = ["create-fsync", "append-fdatasync", "rename-fsync", "replace-fsync"]

[target]
kind = "guest"
"""


@pytest.fixture(scope="module")
def guest_run(image, state_dir, tmp_path_factory):
    """One real guest run of fio + crash on ext4 and f2fs, through the CLI."""
    root = tmp_path_factory.mktemp("guestrun")
    plan = root / "plan.toml"
    plan.write_text(GUEST_PLAN)
    results = root / "results"
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "fslab", "run", str(plan), "--results", str(results)],
                       capture_output=True, text=True, timeout=1500, cwd=REPO,
                       env={**os.environ, "FSLAB_STATE_DIR": str(state_dir)})
    print(f"[guest run] {time.monotonic() - t0:.0f}s, exit {p.returncode}")
    print(p.stdout[-6000:], p.stderr[-3000:])
    assert p.returncode == 0, p.stderr[-3000:] or p.stdout[-3000:]
    db = sqlite3.connect(results / "fslab.sqlite")
    db.row_factory = sqlite3.Row
    return results, db


@pytest.mark.guest
@needs_guest
def test_fio_smoke_in_guest_is_merged_into_host_store(guest_run):
    results, db = guest_run
    run = db.execute("SELECT * FROM runs").fetchone()
    env = json.loads(run["environment"])
    assert run["status"] == "finished"
    accel = env["guest"]["accel"]
    assert accel in ("kvm", "tcg") and env["guest"]["emulated"] == (accel == "tcg")
    assert env["guest"]["kernel"].endswith("-amd64")
    rows = db.execute("SELECT host, fs, COUNT(*) n FROM records WHERE suite='fio' "
                      "GROUP BY host, fs").fetchall()
    assert {(r["host"], r["fs"]) for r in rows} == {(f"guest-{accel}", fs)
                                                   for fs in ("ext4", "f2fs", "ext2", "zfs")}
    for r in db.execute("SELECT DISTINCT artifact FROM records WHERE suite='fio'"):
        assert r["artifact"].startswith(f"runs/{run['run_id']}/guest-{accel}/")
        assert (results / r["artifact"]).exists(), r["artifact"]
    iops = db.execute("SELECT value FROM records WHERE suite='fio' AND metric='write_iops'").fetchall()
    assert iops and all(v["value"] > 0 for v in iops)
    assert (results / "runs" / run["run_id"] / f"guest-{accel}" / "console.log").exists()


@pytest.mark.guest
@needs_guest
def test_zfs_in_guest_is_kernel_openzfs_and_says_so(guest_run):
    """ZFS records from the guest are OpenZFS 2.x's (kernel module), never zfs-fuse's."""
    results, db = guest_run
    run = db.execute("SELECT * FROM runs").fetchone()
    env = json.loads(run["environment"])
    zfs_image = env["guest"]["image"]["openzfs"]
    assert zfs_image and zfs_image["ok"], f"OpenZFS not in the guest image: {zfs_image}"
    label = env["tools"]["zfs implementation"]
    assert label == env["guest"]["environment"]["tools"]["zfs implementation"]
    assert label.startswith("OpenZFS 2.") and label.endswith("kernel module"), label
    assert "fuse" not in json.dumps(env["tools"]).lower()
    iops = db.execute("SELECT value FROM records WHERE suite='fio' AND fs='zfs' "
                      "AND metric='write_iops'").fetchall()
    assert iops and all(v["value"] > 0 for v in iops)


@pytest.mark.guest
@needs_guest
def test_crash_suite_gives_a_table_for_ext4_f2fs_ext2_and_openzfs(guest_run):
    import pandas as pd
    from fslab.report.figures.crash import table
    results, db = guest_run
    data = pd.read_sql_query("SELECT fs AS level, \"case\", metric, value FROM records "
                             "WHERE suite='crash'", db)
    t = table(data)
    assert set(t.index) == {"ext4", "f2fs", "ext2", "zfs"}
    assert {"create-fsync", "append-fdatasync", "rename-fsync", "replace-fsync",
            "consistent", "checker clean"} <= set(t.columns)
    # ext4 keeps every one of these promises; the checker must agree
    assert t.loc["ext4", "consistent"] == "4/4"
    assert t.loc["ext4", "checker clean"] == "4/4"
    # the harness must be able to see damage: ext2 has no journal, and a power cut leaves
    # its bitmaps stale (e2fsck: "Inode bitmap differences"), whatever fsync promised
    assert t.loc["ext2", "checker clean"] != "4/4"
    # ZFS never overwrites live blocks: the pool imported from the cut disk (its intent log
    # replayed) must scrub clean every time; what fsync kept is the table's finding
    assert t.loc["zfs", "checker clean"] == "4/4"
    for r in db.execute("SELECT DISTINCT artifact FROM records WHERE suite='crash'"):
        detail = json.loads((results / r["artifact"]).read_text())
        assert "problems" in detail and "checker" in detail


RESUME_PLAN = """
[run]
profile = "smoke"
iterations = 3

[[filesystem]]
name = "ext4"

[[filesystem]]
name = "tmpfs"

[[suite]]
kind = "fio"
[suite.jobs.w]
rw = "randwrite"
bs = "4k"
size = "16M"
runtime = 1
"""


@pytest.mark.guest
@needs_guest
def test_an_interrupted_guest_run_keeps_its_units_and_resumes_in_the_guest(image, state_dir,
                                                                           tmp_path):
    """Ctrl-C stops the guest's fslab as Ctrl-C stops a local run: the units done are merged
    (not lost with the guest's disk); `--resume` (no --target) goes back into a guest, which
    keeps those units and runs only the rest."""
    plan = tmp_path / "plan.toml"
    plan.write_text(RESUME_PLAN)
    results = tmp_path / "results"
    env = {**os.environ, "FSLAB_STATE_DIR": str(state_dir)}
    proc = subprocess.Popen([sys.executable, "-m", "fslab", "run", str(plan), "--target", "guest",
                             "--results", str(results)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=REPO, env=env,
                            preexec_fn=sigint_as_at_a_terminal)
    import queue
    import threading
    lines: list[str] = []
    q: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [q.put(x) for x in proc.stdout] + [q.put(None)],
                     daemon=True).start()
    try:
        deadline = time.monotonic() + 900
        while True:   # the guest prints a line per unit on its console
            line = q.get(timeout=max(1.0, deadline - time.monotonic()))
            if line is None:
                pytest.fail("the guest run ended before its second unit: " + "".join(lines[-30:]))
            lines.append(line)
            if "[2/6]" in line and ": done (" in line:
                break
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    while (line := q.get(timeout=30)) is not None:
        lines.append(line)
    out = "".join(lines)
    assert proc.returncode == 130, out[-4000:]
    assert "the host asked to stop" in out, out[-4000:]
    db = sqlite3.connect(results / "fslab.sqlite")
    run_id, status = db.execute("SELECT run_id, status FROM runs").fetchone()
    assert status == "interrupted"
    first = dict(db.execute("SELECT fs || ' #' || iteration, COUNT(*) FROM records "
                            "WHERE metric='write_iops' GROUP BY 1").fetchall())
    assert 2 <= len(first) < 6, first
    db.close()
    assert not _qemu_pids(), "the interrupted guest is still running"

    p = subprocess.run([sys.executable, "-m", "fslab", "run", "--resume", run_id,
                        "--results", str(results)], capture_output=True, text=True,
                       timeout=1200, cwd=REPO, env=env)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    assert "resuming the guest's run" in p.stdout
    assert f"resuming: {len(first)} of 6 units already done" in p.stdout, p.stdout[-4000:]
    db = sqlite3.connect(results / "fslab.sqlite")
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "finished"
    hosts = {h for (h,) in db.execute("SELECT DISTINCT host FROM records")}
    assert hosts and all(h.startswith("guest-") for h in hosts), hosts   # never the host's fs
    after = dict(db.execute("SELECT fs || ' #' || iteration, COUNT(*) FROM records "
                            "WHERE metric='write_iops' GROUP BY 1").fetchall())
    assert set(after) == {f"{fs} #{i}" for fs in ("ext4", "tmpfs") for i in (1, 2, 3)}
    assert [u for (u,) in db.execute("SELECT status FROM units")] == ["done"] * 6


@pytest.mark.guest
@needs_guest
def test_cleanup_leaves_a_live_runs_guest_and_clears_a_dead_ones(image, state_dir, tmp_path):
    """`fslab cleanup` never touches a live fslab's guest (issue 36 item 20: it cleans only
    what dead processes left); a guest whose fslab died has gone with it (qemu dies with its
    parent), and cleanup removes what it left: its disks and its entry."""
    from fslab.system import state
    from fslab.guest.qemu import Guest
    env = {**os.environ, "FSLAB_STATE_DIR": str(state_dir)}

    def cleanup() -> str:
        p = subprocess.run([sys.executable, "-m", "fslab", "cleanup"], capture_output=True,
                           text=True, timeout=120, cwd=REPO, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        return p.stdout
    # a live run's guest (this process is its fslab): left running, and said
    live_disk = tmp_path / "live.img"
    live_disk.write_bytes(b"x")
    # no rootfs disk: the initramfs waits for one, so the guest keeps running a while
    g = Guest(image.kernel, image.initrd, "tcg", memory_mib=256, cpus=1, scratch=[live_disk])
    g.start()
    try:
        assert g.running and _qemu_pids(g.ident)
        said = cleanup()
        assert "still running" in said and f"guest {g.ident}" not in said, said
        assert _qemu_pids(g.ident) and live_disk.exists()
    finally:
        g.stop()
    # a dead fslab's guest: its process started it and exited without stopping it
    dead_disk = tmp_path / "dead.img"
    dead_disk.write_bytes(b"x")
    starter = (
        "import os\n"
        "from pathlib import Path\n"
        "from fslab.guest.qemu import Guest\n"
        f"g = Guest(Path({str(image.kernel)!r}), Path({str(image.initrd)!r}), 'tcg', "
        f"memory_mib=256, cpus=1, scratch=[Path({str(dead_disk)!r})])\n"
        "g.start()\n"
        "print(g.ident, flush=True)\n"
        "os._exit(0)   # dies with its guest running, as a killed fslab would\n")
    started = subprocess.run([sys.executable, "-c", starter], capture_output=True, text=True,
                             timeout=120, cwd=REPO, env=env)
    ident = started.stdout.strip().splitlines()[-1] if started.stdout.strip() else ""
    assert started.returncode == 0 and ident, started.stdout + started.stderr
    deadline = time.time() + 10
    while _qemu_pids(ident) and time.time() < deadline:
        time.sleep(0.2)
    assert not _qemu_pids(ident), "qemu outlived the fslab that started it"
    said = cleanup()
    assert f"guest {ident}" in said, said
    assert not dead_disk.exists()
    assert not any(e["kind"] == "guest" for e in state.entries())


def test_data_disk_fits_the_largest_filesystem_and_is_aligned():
    from fslab import plan as plans
    from fslab.run.guest import data_disk_bytes
    p = plans.parse('[run]\nprofile = "smoke"\n[[filesystem]]\nname = "jfs"\n'
                    'image_size = "20000000000"\n[[suite]]\nkind = "fio"\n')
    from fslab.run.schedule import Schedule
    size = data_disk_bytes(Schedule.of(p))
    assert size % (1 << 20) == 0           # qemu's cache=none needs aligned disks
    assert size >= 2 * 20_000_000_000
