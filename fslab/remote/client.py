"""One fio invocation from the coordinator: `fio --client=A a.fio --client=B b.fio`.

Each host gets its own job file (its own mount point in `directory=`). fio's
client-mode JSON has one `client_stats` entry per host and job, plus "All clients"
(the sum) when several hosts ran. fio exits 0 even when a server could not be
reached, so a host's success is judged by its own entries, never by the exit code.
A host's server is reached at its network address (transport "direct") or at the
Unix socket here that its SSH connection carries to the server's Unix socket on the host
("ssh").
"""
from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fslab.fio.parse import FioParseError, JobResult, job_measurements, load_fio_output
from fslab.fio.joberror import describe as describe_job_error
from fslab.records import Measurement
from fslab.remote.hosts import HostSpec
from fslab.system.proc import kill_group


@dataclass(frozen=True)
class Endpoint:
    """Where fio's client reaches one host's server, and how fio's JSON names it."""
    name: str                  # the host's name in hosts.toml
    client: str                # fio's --client= spelling: ip:ADDR,PORT or sock:PATH
    labels: tuple[str, ...]    # the `hostname` spellings of its client_stats entries

    @classmethod
    def direct(cls, host: HostSpec) -> "Endpoint":
        # the parser labels an entry 'address', or 'address:port' when one address ran
        # several servers: both spellings lead to the host
        return cls(host.name, host.fio_address, (host.address, f"{host.address}:{host.port}"))

    @classmethod
    def socket(cls, name: str, path: str) -> "Endpoint":
        return cls(name, f"sock:{path}", (path,))    # fio names the entry by the path


@dataclass
class HostOutcome:
    measurements: list[Measurement] = field(default_factory=list)
    error: str | None = None        # None: the host ran the job cleanly


@dataclass
class ClientRun:
    per_host: dict[str, HostOutcome]
    aggregate: list[Measurement] | None     # "All clients", when fio wrote one
    returncode: int


def client_argv(jobs: list[tuple[Endpoint, Path]], output: Path) -> list[str]:
    argv = ["fio", "--output-format=json+", f"--output={output}"]
    for host, job_file in jobs:
        argv += [f"--client={host.client}", str(job_file)]
    return argv


def run_clients(jobs: list[tuple[Endpoint, Path]], output: Path, log: Path,
                timeout: float, lost: Callable[[], str | None] | None = None) -> ClientRun:
    """Run the jobs on their hosts at once; fio's raw output stays verbatim in `output`.

    fio's client waits for a server that went away without a word (a network failure,
    a powered-off host) for as long as TCP does; `lost()`, asked every second, says when
    a host is known to be gone, and the invocation is stopped then (its hosts get no
    results) instead of at `timeout`."""
    with open(log, "wb") as out:
        p = subprocess.Popen(client_argv(jobs, output), stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    code = p.wait(timeout=1)
                    break
                except subprocess.TimeoutExpired:
                    pass
                why = (f"fio client timed out after {timeout:.0f}s"
                       if time.monotonic() > deadline else lost() if lost else None)
                if why:
                    p.terminate()
                    try:
                        p.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        kill_group(p)
                    code = -1
                    out.write(f"\nfslab: {why}; fio client stopped\n".encode())
                    break
        finally:
            if p.poll() is None:       # interrupted (Ctrl-C): the client goes too
                kill_group(p)
    return split_by_host([h for h, _ in jobs], output, log, code)


def split_by_host(hosts: list[Endpoint], output: Path, log: Path, code: int) -> ClientRun:
    text = log.read_text(errors="replace")
    try:
        raw = output.read_bytes() if output.exists() else b""
        results = job_measurements(load_fio_output(raw, str(output)))
    except FioParseError as e:
        why = _said(text) or str(e)
        return ClientRun({h.name: HostOutcome(error=f"fio exit {code}: {why}") for h in hosts},
                         None, code)
    names = {label: h.name for h in hosts for label in h.labels}
    mine: dict[str, list[JobResult]] = {h.name: [] for h in hosts}
    aggregate = None
    for r in results:
        if r.aggregate:
            aggregate = r.measurements
        elif r.hostname in names:
            mine[names[r.hostname]].append(r)
    per_host = {}
    for h in hosts:
        jobs = mine[h.name]
        outcome = HostOutcome()
        for job in jobs:
            for m in job.measurements:
                if len(jobs) > 1:       # several jobs on one host: tell them apart
                    m.params = {**m.params, "job": job.job_name}
            outcome.measurements += job.measurements
        errors = [j for j in jobs if j.error]
        if not jobs:
            outcome.error = f"no results from {h.name} ({h.client}): " + \
                (_said(text, h.labels[0]) or _said(text) or f"fio exit {code}")
        elif errors:
            said = _said(text, h.labels[0])
            outcome.error = f"fio on {h.name}: {describe_job_error(errors[0])}" + (f": {said}" if said else "")
        per_host[h.name] = outcome
    return ClientRun(per_host, aggregate, code)


def _said(text: str, about: str | None = None) -> str:
    """fio's own complaint lines (about one address, if given), joined."""
    lines = [ln.strip() for ln in text.splitlines()
             if ("fio:" in ln or "error" in ln.lower() or "timeout" in ln.lower()
                 or "fslab:" in ln) and (about is None or about in ln)]
    return " | ".join(dict.fromkeys(lines))[:400]
