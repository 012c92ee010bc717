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

from fslab.system import teardown
from fslab.errors import FslabError, StepFailed
from fslab.plan import Plan
from fslab.system.proc import is_root
from fslab.remote import hosts as hostfile
from fslab.remote.hosts import HostsFile
from fslab.remote.runner import GroupRunner, HostSession
from fslab.run.scheduler import Outcome, finish_run
from fslab.run.session import create_run, run_environment, sigterm_as_interrupt
from fslab.store import Store

__all__ = ["run_on_hosts"]


def run_on_hosts(plan: Plan, store: Store, hosts_path: Path | None, *, console: Console,
                 resume: str | None = None) -> str:
    """Run `plan`'s fio cases on every host of the hosts file; returns the run id."""
    run_id = store.run(resume)["run_id"] if resume else None
    hosts = _hosts_config(plan, store, hosts_path, run_id)
    units, notes = _fio_units(plan)
    if any(h.is_local for h in hosts.host) and not is_root():
        raise FslabError("local hosts need root (loop devices, mounts, network namespaces)")
    teardown.cleanup(only_dead_owners=True)   # what crashed runs left would skew this one
    if run_id is None:
        run_id = _create_run(plan, store, hosts)
    else:
        store.set_status(run_id, "running")
    for n in notes:
        console.print(f"[yellow]note:[/] {n}")
    console.print(f"run [bold]{run_id}[/]: {', '.join(f.label for f in plan.filesystem)} × fio on "
                  f"{len(hosts.host)} host(s) ({', '.join(h.name for h in hosts.host)}), mode "
                  f"{hosts.mode}, profile {plan.run.profile}, {plan.iterations} iterations; "
                  f"results in {store.root}")
    sessions = _open_sessions(hosts, sorted({f.name for f in plan.filesystem}), store, run_id,
                              console)
    try:
        with sigterm_as_interrupt():
            tally = _execute(plan, store, run_id, hosts, sessions, units, console)
    finally:
        _close_sessions(sessions, console)
    finish_run(store, run_id, tally, console)
    from fslab.remote.report import print_host_summary
    print_host_summary(store, run_id, console)
    return run_id


def _hosts_config(plan: Plan, store: Store, path: Path | None, run_id: str | None) -> HostsFile:
    if path is not None:
        return hostfile.load(path)
    if run_id is not None:     # a resumed run uses the hosts it started with
        stored = store.run(run_id)["environment"].get("multihost", {}).get("hosts_toml")
        if stored:
            return hostfile.parse(stored, f"hosts of run {run_id}")
    if plan.hosts:
        return hostfile.from_plan(plan.hosts, plan.source_text, plan.source_path)
    raise FslabError("no hosts: pass --hosts hosts.toml or add a [hosts] table to the plan")


def _fio_units(plan: Plan):
    """The plan's fio units in the scheduler's seeded order (other suites cannot go remote)."""
    from fslab.run.scheduler import build_units
    units, notes = build_units(plan, host="")
    others = sorted({u.suite.name for u in units if u.suite.name != "fio"})
    if others:
        notes.append(f"suite(s) {', '.join(others)} skipped: only fio runs across hosts "
                     "(through fio's client/server mode)")
    units = [u for u in units if u.suite.name == "fio"]
    if not units:
        raise FslabError("the plan has no fio cases to run on the hosts")
    return units, notes


def _create_run(plan: Plan, store: Store, hosts: HostsFile) -> str:
    env = run_environment(plan, [f.name for f in plan.filesystem], {"kind": "hosts"})
    env["multihost"] = {"mode": hosts.mode, "hosts_toml": _hosts_text(hosts),
                        "hosts": {h.name: {"spec": h.model_dump()} for h in hosts.host}}
    return create_run(store, plan, env)


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
    from fslab.remote.local import LocalHost
    from fslab.remote.ssh import AgentHost, ssh_transport
    sessions = {}
    for h in hosts.host:
        s = sessions[h.name] = HostSession(h)
        try:
            s.ops = (LocalHost(h.workdir_path, h.netns) if h.is_local else
                     AgentHost(ssh_transport(h.ssh, h.ssh_options), h.python, h.workdir_path))
            env = s.ops.environment(fs_names)
            started = s.ops.start_server(h.fio_address, h.address, h.port, h.server)["started"]
        except (StepFailed, FslabError, OSError) as e:
            s.down = f"{h.name} unavailable: {e}"
            console.print(f"[red]host {h.name}:[/] {e}")
            continue
        env["fio_server"] = {"address": h.fio_address, "started_by_fslab": started}
        store.update_environment(run_id, {"multihost": {"hosts": {h.name: {"environment": env}}}})
        console.print(f"host {h.name}: fio server at {h.address}:{h.port} "
                      f"({'started' if started else 'reused'}), {env.get('kernel', '?')}")
    return sessions


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
