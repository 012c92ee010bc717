"""The scheduler: the schedule's seeded, interleaved rounds of (filesystem, case) units.

Each round runs every (fs variant, suite case) once, in the order the schedule
(fslab/run/schedule.py) draws from the plan's seed and the round number, so no
filesystem gets all its iterations back to back (drift, thermal state, page cache)
and the order can be reproduced. Each finished unit is committed before the next
starts. A resumed run skips units already done and redoes the rest.
"""
from __future__ import annotations

import json
import shutil
import time
import traceback
from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

from fslab.errors import FslabError, StepFailed
from fslab.plan import Plan
from fslab.records import canonical_params, stamp
from fslab.run.blocks import blocks
from fslab.run.schedule import Schedule, Unit, driver_for
from fslab.run.session import Outcome, end_driver_sessions
from fslab.store import Store
from fslab.workloads.base import UnitContext, UnitFailed
from fslab.system import teardown
from fslab.system.settle import QUIET_KIB, settle
from fslab.run.adaptive import CAVEAT, AdaptiveRounds
from fslab.run.giveup import IdenticalFailures


def execute(schedule: Schedule, store: Store, run_id: str, *, make_target: Callable,
            workdir: Path, console: Console, mountpoint_dir: Path | None = None,
            host: str = "localhost", rounds_policy=None) -> Outcome:
    """Run the schedule's rounds (less what this host cannot make); then, with a
    `rounds_policy` (fslab decide's race), as many more as it asks for: after each round r
    it is told r and answers which pairs run in round r + 1 (an empty list: stop). It
    decides from the store alone, so a resumed run replays the same decisions."""
    schedule = schedule.here() if host == "localhost" else schedule
    plan, pairs, notes = schedule.plan, schedule.pairs, schedule.notes
    units = schedule.units(host)
    for n in notes:
        console.print(f"[yellow]note:[/] {n}")
    status = store.unit_status(run_id)
    # a race (rounds_policy) keeps a failed unit as failed on resume: its candidate was
    # eliminated for it, and a retry would put its later rounds beside others' earlier ones
    final = ("done", "failed") if rounds_policy is not None else ("done",)
    todo = [u for u in units if status.get(u.key) not in final]
    out = Outcome(skipped=len(units) - len(todo))
    if out.skipped:
        console.print(f"resuming: {out.skipped} of {len(units)} units already done")
    drivers_used = set() if mountpoint_dir else {spec.name for spec, _, _ in pairs}
    seen_variants: set[str] = set()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
    # a log (CI, a pipe) or a dumb terminal (the guest's serial console) cannot redraw a bar:
    # it gets one line per unit instead
    live = console.is_terminal and not console.is_dumb_terminal
    try:
        # a race's units: counted against the most it can run (every candidate in every
        # round), the units an interrupted race ran included, so a resumed race counts as
        # its decision does; other runs' against their fixed (or growing adaptive) total
        at_most = rounds_policy.most_units(pairs) if rounds_policy is not None else None
        with Progress(*columns, console=console, transient=False, disable=not live) as bar:
            task = bar.add_task("starting", total=at_most or len(todo),
                                completed=out.skipped if at_most else 0)
            count = 0
            # a race eliminates a failing candidate itself; a run gives up on a case that
            # failed identically everywhere in round 1
            identical = IdenticalFailures.of(todo) if rounds_policy is None else None

            def run_all(batch: list[Unit]) -> None:
                nonlocal count
                for block in blocks(batch, plan, mountpoint_dir is not None):
                    if identical:
                        kept = []
                        for unit in block:
                            if (why := identical.skips(unit)):
                                count += 1
                                store.finish_unit(run_id, unit.key, [], "failed", why, time.time(), None)
                                out.failed += 1
                                bar.advance(task)
                            else:
                                kept.append(unit)
                        block = kept
                    if not block:
                        continue
                    bar.update(task, description=escape(block[0].key.label() if len(block) == 1
                                                        else _block_label(block)))
                    t0 = time.monotonic()
                    if len(block) == 1:
                        failures = [_run_unit(block[0], plan, store, run_id, make_target, workdir,
                                              console, mountpoint_dir, seen_variants)]
                    else:
                        failures = _run_block(block, plan, store, run_id, make_target, workdir,
                                              console, seen_variants)
                    took = time.monotonic() - t0
                    for unit, failure in zip(block, failures):
                        count += 1
                        ok = failure is None
                        out.done += ok
                        out.failed += not ok
                        bar.advance(task)
                        if identical and (line := identical.record(unit, failure)):
                            console.print(f"[yellow]note:[/] {line}")
                        if not live:
                            where = (f"unit {out.skipped + count} of at most {at_most}" if at_most else
                                     f"[{count}/{int(bar.tasks[0].total)}]")
                            share = f" of a block of {len(block)}" if len(block) > 1 else ""
                            console.print(f"{where} {unit.key.label()}: {'done' if ok else 'failed'} "
                                          f"({took / len(block):.1f}s{share})", markup=False,
                                          highlight=False)

            run_all(todo)
            if rounds_policy is not None:
                it = plan.iterations
                while (wanted := rounds_policy.after_round(it, pairs)):
                    it += 1
                    batch = [u for u in schedule.round(it, wanted, host)
                             if status.get(u.key) not in final]
                    out.skipped += len(wanted) - len(batch)
                    if len(wanted) > len(batch):      # resumed: the round's units run before
                        bar.advance(task, len(wanted) - len(batch))
                    run_all(batch)
            elif plan.run.adaptive:
                rounds = AdaptiveRounds(plan, pairs, store, run_id)
                console.print(f"[dim]note: {CAVEAT}[/dim]")
                for it in range(plan.iterations + 1, plan.run.max_iterations + 1):
                    wanted = rounds.still_wide()
                    console.print(rounds.describe(wanted, it))
                    if not wanted:
                        break
                    batch = [u for u in schedule.round(it, wanted, host)
                             if status.get(u.key) != "done"]
                    out.skipped += len(wanted) - len(batch)
                    bar.update(task, total=bar.tasks[0].total + len(batch))
                    run_all(batch)
                rounds.save()
    except KeyboardInterrupt:
        out.interrupted = True
    finally:
        # anything a failed teardown left (e.g. a busy pool) gets another, final try
        import os
        _, failed = teardown.cleanup(owner=os.getpid())
        for f in failed:
            console.print(f"[red]could not tear down[/] {f}; run `fslab cleanup`")
        end_driver_sessions(drivers_used, lambda e: console.print(f"[yellow]warning:[/] {e}"))
    return out


def _block_label(block: list[Unit]) -> str:
    k = block[0].key
    return f"round {k.iteration} {k.suite}:{k.case} on {', '.join(u.spec.label for u in block)} (slices)"


def _context(unit: Unit, plan: Plan, store: Store, run_id: str, make_target, workdir: Path,
             console: Console, mountpoint_dir: Path | None) -> UnitContext:
    """A unit's context, its raw-file directory made empty."""
    rel = f"runs/{run_id}/{unit.key.slug()}"
    adir = store.root / rel
    if adir.exists():   # leftovers of an interrupted attempt: redo from scratch
        shutil.rmtree(adir)
    adir.mkdir(parents=True)
    return UnitContext(key=unit.key, run_id=run_id, spec=unit.spec,
                       driver=driver_for(unit.spec, mountpoint_dir is not None), profile=plan.profile,
                       plan_seed=plan.run.seed, artifact_dir=adir, artifact_rel=rel,
                       workdir=workdir, make_target=make_target, mountpoint_dir=mountpoint_dir,
                       log=lambda m: console.print(f"  {m}"), page_cache=plan.page_cache,
                       unit_timeout=plan.run.unit_timeout)


def _settle(plan: Plan, ctx: UnitContext, console: Console) -> None:
    if plan.settle and ctx.mountpoint_dir is None:
        settled = settle()
        ctx.phases["settle"] = settled.seconds
        if settled.dirty_kib > QUIET_KIB:
            console.print(f"  [yellow]note:[/] {settled.dirty_kib} KiB still dirty after "
                          f"{settled.seconds:.0f} s of settling; the unit starts anyway")


def _run_block(block: list[Unit], plan: Plan, store: Store, run_id: str, make_target,
               workdir: Path, console: Console, seen_variants: set[str]) -> list[str | None]:
    """A round's units of one case as one block of interleaved slices; each committed as
    its own unit. Per unit: None when done, else why it failed."""
    ctxs = [_context(u, plan, store, run_id, make_target, workdir, console, None) for u in block]
    _settle(plan, ctxs[0], console)
    k = block[0].key
    # beside the units' own directories: blocks/<suite>-<case>-<params hash>/iter-NNN
    case_dir, it_dir = block[0].key.slug().split("/")[-2:]
    block_dir = store.root / f"runs/{run_id}/blocks/{case_dir}/{it_dir}"
    if block_dir.exists():
        shutil.rmtree(block_dir)
    seed = f"{plan.run.seed}:{k.iteration}:{k.suite}:{k.case}:{canonical_params(block[0].case.params)}"
    started = time.time()
    try:
        results = block[0].suite.measure_block(ctxs, block[0].case, plan.run.slice_ms,
                                               block_dir, seed)
    except (StepFailed, FslabError, OSError) as e:
        (ctxs[0].artifact_dir / "error.txt").write_text(traceback.format_exc())
        results = [UnitFailed(f"{type(e).__name__}: {e}") for _ in block]
    failures = []
    for unit, ctx, got in zip(block, ctxs, results):
        if isinstance(got, UnitFailed):
            console.print(f"[red]failed[/] {unit.key.label()}: {got}")
            measurements, status, message = got.measurements, "failed", str(got)
        else:
            measurements, status, message = got, "done", None
        ctx.phases["unit"] = (time.time() - started) / len(block) + ctx.phases.get("settle", 0.0)
        _commit(unit, ctx, store, run_id, measurements, status, message, started, seen_variants)
        failures.append(None if status == "done" else message)
    return failures


def _run_unit(unit: Unit, plan: Plan, store: Store, run_id: str, make_target, workdir: Path,
              console: Console, mountpoint_dir: Path | None, seen_variants: set[str]) -> str | None:
    """Run one unit and commit it; None when it is done, else why it failed."""
    ctx = _context(unit, plan, store, run_id, make_target, workdir, console, mountpoint_dir)
    adir = ctx.artifact_dir
    _settle(plan, ctx, console)
    started = time.time()
    measurements, status, message = [], "done", None
    try:
        measurements = unit.suite.measure(ctx, unit.case)
    except UnitFailed as e:
        measurements, status, message = e.measurements, "failed", str(e)
    except (StepFailed, FslabError, OSError) as e:
        status, message = "failed", f"{type(e).__name__}: {e}"
        (adir / "error.txt").write_text(traceback.format_exc())
    if status == "failed":
        console.print(f"[red]failed[/] {unit.key.label()}: {message}")
    ctx.phases["unit"] = time.time() - started + ctx.phases.get("settle", 0.0)
    _commit(unit, ctx, store, run_id, measurements, status, message, started, seen_variants)
    return None if status == "done" else message


def _commit(unit: Unit, ctx: UnitContext, store: Store, run_id: str, measurements: list,
            status: str, message: str | None, started: float, seen_variants: set[str]) -> None:
    """A finished unit's phases, environment and records into the store."""
    adir, rel = ctx.artifact_dir, ctx.artifact_rel
    (adir / "phases.json").write_text(json.dumps({k: round(v, 4) for k, v in ctx.phases.items()}))
    if "filesystem" in ctx.environment:
        import orjson
        (adir / "filesystem.json").write_bytes(
            orjson.dumps(ctx.environment["filesystem"], option=orjson.OPT_INDENT_2))
        label = unit.spec.label
        if label not in seen_variants:
            seen_variants.add(label)
            store.update_environment(run_id, {"filesystems": {label: ctx.environment["filesystem"]}})
    if "workload" in ctx.environment:   # what a suite says of its input (aging: the history)
        store.update_environment(run_id, {"workloads": {
            f"{unit.key.suite}:{unit.key.case}": ctx.environment["workload"]}})
    records = []
    for m in measurements:
        m.artifact = m.artifact or rel
        records.append(stamp(unit.key, run_id, m))
    store.finish_unit(run_id, unit.key, records, status, message, started, rel)
