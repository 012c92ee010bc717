"""The agent: runs INSIDE the guest as `python3 -m fslab.guest.agent /job`.

Protocol (files in the 9p job share, written by fslab.run.guest on the host):
    job.json    {"argv": [...], "data_disk": "/dev/vdb", "results": "/data/results",
                 "env": {...}}
    src/        fslab's own source (so the guest runs exactly the host's fslab)
    plan.toml   the plan to run
    seed.sqlite (optional) the guest store of an interrupted attempt, for --resume
    stop        (written by the host on Ctrl-C) stop as Ctrl-C would: the guest's fslab
                tears its unit down and marks its run interrupted; what it measured is sent
The agent formats and mounts the data disk, runs argv (normally `python3 -m fslab
run plan.toml --results /data/results ...`) with its output on the serial console,
then sends the results directory as out/results.tar and writes out/status.json last:
the host trusts results only when status.json exists. Results live on the data
disk while running because SQLite's WAL needs shared mmap, which 9p lacks.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tarfile
import sys
import time
from pathlib import Path


def _say(msg: str) -> None:
    print(f"fslab-agent: {msg}", flush=True)


def prepare_data_disk(dev: str, mountpoint: str = "/data") -> None:
    # one inode per 256 KiB: the disk holds a few loop images and the raw results,
    # and small inode tables keep mkfs fast under emulation with no lazy init later
    subprocess.run(["mkfs.ext4", "-q", "-F", "-i", "262144", "-E",
                    "lazy_itable_init=0,lazy_journal_init=0,nodiscard", "-L", "fslab-data", dev],
                   check=True, timeout=1200)     # under TCG emulation a full mkfs is slow
    Path(mountpoint).mkdir(exist_ok=True)
    # discard: images deleted in the guest become holes in the host's sparse file again
    subprocess.run(["mount", "-t", "ext4", "-o", "discard,noatime", dev, mountpoint], check=True,
                   timeout=300)


def guest_facts() -> dict:
    u = os.uname()
    cpu = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
    return {"kernel": u.release, "cpu": cpu, "cpus": os.cpu_count(),
            "memory_bytes": int(mem) * 1024, "python": sys.version.split()[0]}


def _default_sigint() -> None:
    # in the child: Python turns SIGINT into KeyboardInterrupt only if it was not ignored
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# how often the host's stop file is looked for while fslab runs: a Ctrl-C on the host
# reaches the guest's fslab within this (one stat of a shared file each time)
STOP_POLL_S = 0.2


def run_until_done_or_stopped(argv: list[str], env: dict, stop: Path) -> int:
    """Run fslab; when the host writes `stop`, give it SIGINT once (Ctrl-C: it tears
    its current unit down and marks its run interrupted, keeping the units done)."""
    if stop.exists():   # asked while the guest booted: nothing started, nothing to tear down
        _say("the host asked to stop before fslab started")
        return 130
    proc = subprocess.Popen(argv, env=env, cwd="/tmp", preexec_fn=_default_sigint)
    asked = False
    while proc.poll() is None:
        if not asked and stop.exists():
            asked = True
            _say("the host asked to stop: interrupting fslab (it keeps the units done)")
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=STOP_POLL_S)
        except subprocess.TimeoutExpired:
            pass
    return proc.returncode


def main(job_dir: str) -> int:
    job = Path(job_dir)
    spec = json.loads((job / "job.json").read_text())
    out = job / "out"
    out.mkdir(exist_ok=True)
    status: dict = {"facts": guest_facts(), "started": time.time()}
    rc = 1
    try:
        if spec.get("data_disk"):
            t0 = time.monotonic()
            prepare_data_disk(spec["data_disk"])
            _say(f"data disk {spec['data_disk']} ready in {time.monotonic() - t0:.1f}s")
        results = Path(spec.get("results", "/data/results"))
        if spec.get("seed"):   # an interrupted attempt's store: --resume continues it
            results.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(job / spec["seed"], results / "fslab.sqlite")
        env = {**os.environ, **spec.get("env", {})}
        _say("running " + " ".join(spec["argv"]))
        t0 = time.monotonic()
        rc = run_until_done_or_stopped(spec["argv"], env, job / "stop")
        status["seconds"] = round(time.monotonic() - t0, 2)
        _say(f"fslab exited {rc} after {status['seconds']}s")
    except Exception as e:   # report anything to the host instead of dying silently
        status["error"] = f"{type(e).__name__}: {e}"
        _say(status["error"])
    finally:
        results = Path(spec.get("results", "/data/results"))
        if results.exists():
            # one tar stream: over 9p under emulation, a file per request is ~10x slower
            t0 = time.monotonic()
            with tarfile.open(out / "results.tar", "w") as tar:
                tar.add(results, arcname="results")
            _say(f"results sent to the host in {time.monotonic() - t0:.1f}s")
        status["exit"] = rc
        status["finished"] = time.time()
        tmp = out / "status.json.tmp"
        tmp.write_text(json.dumps(status, indent=2))
        os.replace(tmp, out / "status.json")   # 9p writes through: no sync needed
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/job"))
