"""Many hosts, one plan: fio's own client/server mode, driven by fslab.

`fslab run PLAN --hosts hosts.toml` (or a plan with a [hosts] table) lands here.
For each host fslab prepares the filesystem there (in this process for a local host,
through `fslab.remote.agent` over SSH otherwise), starts or reuses `fio --server`
bound to the host's address, and runs the plan's fio cases from this machine with
`fio --client=...`. Records carry the host's name from hosts.toml; in parallel mode
fio's "All clients" sum is stored as host "all". See docs/multihost.md.
"""
from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from fslab.errors import FslabError, StepFailed
from fslab.plan import Plan
from fslab.system.proc import is_root
from fslab.remote import hosts as hostfile
from fslab.remote.hosts import LOOPBACK, HostsFile, HostSpec
from fslab.remote.runner import GroupRunner, HostSession
from fslab.run.session import Executor, Outcome, RunSession
from fslab.store import Store
from fslab.store.environment import RunEnvironment
from fslab.remote.client import Endpoint
from fslab.remote.local import LocalHost
from fslab.remote.ssh import AgentHost, SocketForward, ssh_transport

__all__ = ["HostsExecutor"]


class HostsExecutor(Executor):
    """The plan's fio cases on every host of a hosts file, through fio's client/server mode."""

    def __init__(self, hosts_path: Path | None):
        self.hosts_path = hosts_path

    def check(self, session: RunSession) -> None:
        if session.plan.run.adaptive:
            raise FslabError("adaptive iterations are not supported across hosts yet: "
                             "give a fixed --iterations N")
        self.hosts = _hosts_config(session.plan, session.store, self.hosts_path, session.resume)
        self.units, self.notes = _fio_units(session.schedule)
        if any(h.is_local for h in self.hosts.host) and not is_root():
            raise FslabError("local hosts need root (loop devices, mounts, network namespaces)")

    def target_info(self) -> dict:
        return {"kind": "hosts"}

    def environment(self, plan: Plan) -> dict:
        hosts = self.hosts
        return {"multihost": {"mode": hosts.mode, "hosts_toml": _hosts_text(hosts),
                              "hosts": {h.name: {"spec": h.model_dump()} for h in hosts.host}}}

    def announce(self, session: RunSession) -> None:
        p, hosts = session.plan, self.hosts
        for n in self.notes:
            session.console.print(f"[yellow]note:[/] {n}")
        session.console.print(
            f"run [bold]{session.run_id}[/]: {', '.join(f.label for f in p.filesystem)} × fio on "
            f"{len(hosts.host)} host(s) ({', '.join(h.name for h in hosts.host)}), mode "
            f"{hosts.mode}, profile {p.run.profile}, {p.iterations} round{'' if p.iterations == 1 else 's'}; "
            f"results in {session.store.root}")

    def execute(self, session: RunSession) -> Outcome:
        plan, store, run_id, console = session.plan, session.store, session.run_id, session.console
        sessions = _open_sessions(self.hosts, sorted({f.name for f in plan.filesystem}), store,
                                  run_id, console)
        try:
            return _execute(plan, store, run_id, self.hosts, sessions, self.units, console)
        finally:
            _close_sessions(sessions, console)

    def summarise(self, session: RunSession) -> None:
        # here, not at the top: pandas and scipy load only when this runs
        from fslab.report.hosts import print_host_summary
        print_host_summary(session.store, session.run_id, session.console)


def _hosts_config(plan: Plan, store: Store, path: Path | None, run_id: str | None) -> HostsFile:
    if path is not None:
        return hostfile.load(path)
    if run_id is not None:     # a resumed run uses the hosts it started with
        stored = RunEnvironment.of_run(store.run(run_id)).hosts_toml
        if stored:
            return hostfile.parse(stored, f"hosts of run {run_id}")
    if plan.hosts:
        return hostfile.from_plan(plan.hosts, plan.source_text, plan.source_path)
    raise FslabError("no hosts: pass --hosts hosts.toml or add a [hosts] table to the plan")


def _fio_units(schedule):
    """The schedule's fio units in its seeded order (other suites cannot go remote); which
    filesystems a host can make is the host's to say."""
    units, notes = schedule.units(host=""), schedule.notes
    others = sorted({u.suite.name for u in units if u.suite.name != "fio"})
    if others:
        notes.append(f"suite(s) {', '.join(others)} skipped: only fio runs across hosts "
                     "(through fio's client/server mode)")
    units = [u for u in units if u.suite.name == "fio"]
    if not units:
        raise FslabError("the plan has no fio cases to run on the hosts")
    return units, notes


def _hosts_text(hosts: HostsFile) -> str:
    """The hosts as a standalone hosts.toml (a plan's [hosts] table is re-spelled)."""
    import tomllib
    try:
        data = tomllib.loads(hosts.source_text)
        if "host" in data:
            return hosts.source_text
    except tomllib.TOMLDecodeError:
        pass
    import tomli_w
    return tomli_w.dumps({"mode": hosts.mode, "port": hosts.port,
                          "host": [h.model_dump(exclude_defaults=True) for h in hosts.host]})


def _open_sessions(hosts: HostsFile, fs_names: list[str], store: Store, run_id: str,
                   console: Console) -> dict[str, HostSession]:
    sessions = {}
    for h in hosts.host:
        s = sessions[h.name] = HostSession(h)
        try:
            fio_address = h.fio_address
            if h.is_local:
                s.ops = LocalHost(h.workdir_path, h.netns)
                s.endpoint = Endpoint.direct(h)
            else:
                # a server of our own listens on a private Unix socket; a reused one
                # (the admin's) on the host's loopback
                forward = (SocketForward(h.port if h.server == "reuse" else None)
                           if h.transport == "ssh" else None)
                if forward is not None:
                    fio_address = forward.fio_address
                try:
                    s.ops = AgentHost(ssh_transport(h.ssh, h.ssh_options, forward), h.python,
                                      h.workdir_path, forward=forward)
                except OSError:      # no ssh here: nobody else removes the socket's dir
                    if forward is not None:
                        forward.close()
                    raise
                s.endpoint = (Endpoint.socket(h.name, str(forward.socket)) if forward
                              else Endpoint.direct(h))
            env = s.ops.environment(fs_names)
            started = s.ops.start_server(fio_address, h.server_address, h.port,
                                         h.server)["started"]
        except (StepFailed, FslabError, OSError) as e:
            s.down = f"{h.name} unavailable: {e}"
            console.print(f"[red]host {h.name}:[/] {e}")
            continue
        env["fio_server"] = {"address": fio_address, "started_by_fslab": started,
                             "transport": h.transport}
        store.update_environment(run_id, {"multihost": {"hosts": {h.name: {"environment": env}}}})
        console.print(f"host {h.name}: fio server {'started' if started else 'reused'} "
                      f"{where_fio_listens(h, fio_address)}; kernel {env.get('kernel', '?')}")
    return sessions


def where_fio_listens(h: HostSpec, fio_address: str) -> str:
    """Where a host's fio server listens and who can reach it, in words."""
    if h.transport == "ssh" and fio_address.startswith("sock:"):
        return (f"on {fio_address[len('sock:'):]} of {h.name} (a Unix socket only the SSH "
                "user can reach), through the SSH connection (not on the network)")
    if h.transport == "ssh":
        return (f"on {LOOPBACK}:{h.port} of {h.name} (open to that host's local users), "
                "reached through the SSH connection (not on the network)")
    return (f"at {h.address}:{h.port} (transport direct: no authentication, open to "
            "whoever reaches that address)")


def _execute(plan, store, run_id, hosts, sessions, units, console) -> Outcome:
    runner = GroupRunner(plan, store, run_id, hosts, sessions, console)
    status = store.unit_status(run_id)
    work = [(u, names) for u in units for names in runner.pending(u, status)]
    total = len(units) * len(hosts.host)
    tally = Outcome(skipped=total - sum(len(n) for _, n in work))
    if tally.skipped:
        console.print(f"resuming: {len(work)} fio invocation(s) to redo")
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    try:
        with Progress(*columns, console=console, transient=False) as bar:
            task = bar.add_task("starting", total=len(work))
            for unit, names in work:
                bar.update(task, description=f"{unit.key.label()} on {', '.join(names)}")
                done, failed = runner.run(unit, names)
                tally.done += done
                tally.failed += failed
                bar.advance(task)
    except KeyboardInterrupt:
        tally.interrupted = True
    return tally


def _close_sessions(sessions: dict[str, HostSession], console: Console) -> None:
    for s in sessions.values():
        if s.ops is None:
            continue
        try:
            errors = s.ops.close()
        except Exception as e:
            errors = [str(e)]
        for e in errors:
            console.print(f"[yellow]warning:[/] teardown on {s.spec.name}: {e}")
