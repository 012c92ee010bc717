"""`fslab features`: the point-by-point feature matrix; --probe verifies the claims live."""
from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Optional

import orjson
import typer

from fslab.commands._common import ResultsOpt, console, err, existing_store, input_errors, results_dir
from fslab.errors import FslabError
from fslab import filesystems, plan as plans
from fslab.system import state, teardown
from fslab.system.proc import is_root
from fslab.store import open_store

# fslab modules are imported inside the commands: cli imports every command module at
# start-up, so what a command runs loads only when it runs (`fslab --help` stays fast)

DEFAULT_FS = "ext4,xfs,btrfs,zfs"


def register(app: typer.Typer) -> None:
    app.command("features")(features)


def features(
    fs: str = typer.Option(DEFAULT_FS, "--fs", help="Comma-separated filesystems. With exactly "
                           "two and --markdown: a point-by-point comparison, like study S0."),
    probe: bool = typer.Option(False, "--probe", help="Check the claims live on small loop images "
                               "(root; stored as a run with suite 'features')."),
    run_id: Optional[str] = typer.Option(None, "--run", help="Show the probe outcomes stored in "
                                         "this run instead of probing again."),
    json: bool = typer.Option(False, "--json", help="Print the matrix as JSON."),
    markdown: bool = typer.Option(False, "--markdown", help="Print Markdown (tables per category, "
                                  "or point by point for two filesystems)."),
    workdir: Optional[Path] = typer.Option(None, "--workdir", help="Where probe images and mount "
                                           "points go (default: a temporary directory under /var/tmp)."),
    results: Optional[Path] = ResultsOpt,
) -> None:
    """Feature matrix: each filesystem's documented claims, and with --probe what works here."""
    from fslab.features import matrix as fm
    from fslab.features.render import markdown as md_matrix, point_by_point, rich_table
    names = [x.strip() for x in fs.split(",") if x.strip()]
    unknown = [n for n in names if n not in filesystems.names()]
    if unknown or not names:
        raise FslabError(f"--fs {fs!r}: unknown filesystem {', '.join(map(repr, unknown))}; "
                         f"known: {', '.join(filesystems.names())}", code=2)
    outcomes, impls = {}, {}
    if probe or run_id:
        store = open_store(results_dir(results)) if probe else existing_store(results)
        if probe:
            run_id = probe_run(names, store, workdir)
        with input_errors():
            run_id = store.run(run_id)["run_id"]
        outcomes, impls = fm.probe_outcomes(store.records(run_id), store.root)
        if not outcomes:
            raise FslabError(f"run {run_id} has no feature probe records (suite 'features')")
    m = fm.build(names, outcomes, impls)
    if json:
        from fslab import schema
        print(orjson.dumps(schema.stamp("features", m.as_dict()),
                           option=orjson.OPT_INDENT_2).decode())
    elif markdown:
        print(point_by_point(m, *names) if len(names) == 2 else md_matrix(m))
    else:
        table, notes = rich_table(m)
        console.print(table)
        for n in notes:
            console.print(n, markup=False)


def probe_run(names: list[str], store, workdir: Path | None = None) -> str:
    """Run every probe once per filesystem through the scheduler; return the run id."""
    from fslab.system import environment
    from fslab.run.schedule import Schedule
    from fslab.run.scheduler import execute
    from fslab.targets.loop import LoopTarget, backing_device_of
    if not is_root():
        raise FslabError("fslab features --probe needs root to create loop devices and mount")
    the_plan = plans.from_cli(names, ["features"], "smoke", 1, 42)
    teardown.cleanup(only_dead_owners=True)
    base = "/var/tmp" if Path("/var/tmp").is_dir() else tempfile.gettempdir()
    env = environment.capture(filesystems.tool_versions(names), {"kind": "loop", "backing": backing_device_of(base)})
    run_id = store.create_run(the_plan.source_text, env, command=shlex.join(["fslab", *sys.argv[1:]]),
                              profile="smoke")
    err.print(f"probing {', '.join(names)}: run {run_id} in {store.root}")
    if workdir:
        workdir.mkdir(parents=True, exist_ok=True)
    wd = Path(tempfile.mkdtemp(prefix="fslab-features-", dir=workdir or base))
    state.note("dir", str(wd))
    try:
        out = execute(Schedule.of(the_plan), store, run_id, make_target=lambda: LoopTarget(wd), workdir=wd,
                      console=err)
    finally:
        shutil.rmtree(wd, ignore_errors=True)
        state.forget("dir", str(wd))
    store.set_status(run_id, "interrupted" if out.interrupted else
                     "finished" if not out.failed else "finished-with-failures")
    if out.interrupted:
        raise typer.Exit(130)
    return run_id
