"""The table printed after a run: per workload, each filesystem's median and spread."""
from __future__ import annotations

import orjson
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fslab import metrics
from fslab.metrics.answer import job_answer, question_metrics, throughput_metrics
from fslab.records import level_label, params_order
from fslab.metrics.format import human, human_spread   # one number format for every output

# A workload's table: the fate of damaged blocks (the catalogue's outcomes), where "detected"
# has no direction but says the most; else the metric of the workload's question (as in the
# answer line), throughput, then its other directional metrics.
MAX_METRICS = 4


def _params_label(params: str) -> str:
    d = orjson.loads(params)
    d.pop("workload", None)
    return " ".join(f"{k}={v}" for k, v in d.items())


def _columns(g, params: str = "{}", suite: str | None = None) -> list[str]:
    present = set(g.metric)
    cat = metrics.of(suite)
    outcomes = [m for m in cat.names("outcome") if m in present]
    if outcomes:
        return outcomes
    # a job file's job: what it declares answers it (read and write IOPS, fsync p99, ...)
    answer = (job_answer(params, set(g[g.better.notna()].metric))
              or question_metrics(suite, present)[:1])
    through = [m for m in throughput_metrics(suite) if m in present]
    if through and not answer:
        return through
    directional = g[g.better.notna()].metric.unique().tolist()
    return list(dict.fromkeys(answer + through + directional))[:MAX_METRICS]


# Profiles too short for their numbers to mean anything (fslab/plan/profiles.py says so):
# their tables, printed before the answer tests anything, say it beside the numbers, since a
# smoke run's 2.4x between two filesystems reverses in the next one.
NOT_MEANINGFUL = {"smoke": "smoke profile (seconds-long runs on small data): not meaningful, a next "
                         "run may reverse them"}


def print_run_summary(store, run_id: str, console: Console, failures: bool = True) -> None:
    """The run's numbers per case; with `failures`, its failed units (the answer says them
    when one follows: printed here too, each failure was said twice)."""
    df = store.records(run_id)
    caveat = NOT_MEANINGFUL.get(store.run(run_id).get("profile") or "")
    units = store.units(run_id)
    failed = [u for u in units if u["status"] == "failed"]
    if df.empty:
        console.print("no measurements stored" + (f"; {len(failed)} units failed" if failed else ""))
    groups = sorted(df.groupby(["suite", "case", "params"]),
                    key=lambda kv: (kv[0][0], kv[0][1], params_order(kv[0][2])))
    for (suite, case, params), g in groups:
        shown = _columns(g, params, suite)
        if not shown:
            continue
        extra = _params_label(params)
        t = Table(title=f"{suite}: {case}{' ' + extra if extra else ''}", title_justify="left")
        t.add_column("filesystem")
        for m in shown:
            unit = g[g.metric == m].unit.iloc[0]
            arrow = {"higher": " ↑", "lower": " ↓"}.get(g[g.metric == m].better.iloc[0], "")
            t.add_column(f"{metrics.label(m, suite)}{arrow}", justify="right")
        t.add_column("n", justify="right")
        for (fs, variant), h in g.groupby(["fs", "variant"], sort=True):
            row = [level_label(fs, variant)]
            n = 0
            for m in shown:
                v = h[h.metric == m].value
                n = max(n, len(v))
                if v.empty:
                    row.append("-")
                    continue
                unit = h[h.metric == m].unit.iloc[0]
                row.append(human_spread(v.median(), v.min(), v.max(), unit) if len(v) > 1
                           else human(v.median(), unit))
            row.append(str(n))
            t.add_row(*row)
        console.print(t)
        if caveat:      # under each table, not wrapped to its width as a caption would be
            console.print(f"  numbers of a {caveat}", soft_wrap=True)
    console.print("median (min – max) over rounds; ↑ higher is better, ↓ lower is better."
                  + (f" Numbers of a {caveat}; the answer below says what its tests"
                     " could tell apart." if caveat else ""))
    for line in failure_lines(failed)[:10] if failures else ():
        console.print(f"[red]failed[/] {escape(line)}", highlight=False)
    console.print(f"raw files (fio job files, JSON, logs): {store.run_dir(run_id)}")


def failure_lines(failed: list[dict]) -> list[str]:
    """One line per distinct failure: units of a case that failed the same way (or were
    not run for it: fslab/run/giveup.py) are one line naming their filesystems and count."""
    from fslab.run.giveup import NOT_RUN
    groups: dict[tuple, list[dict]] = {}
    for u in failed:
        message = (u["message"] or "").removeprefix(NOT_RUN)
        label = f"{u['fs']}/{u['variant']}"
        key = (u["suite"], u["case"], message.replace(f"{u['fs']}-{u['variant']}", "<fs>")
               .replace(label, "<fs>"))
        groups.setdefault(key, []).append({**u, "message": message})
    lines = []
    for (suite, case, _), us in groups.items():
        u = us[0]
        if len(us) == 1:
            lines.append(f"{u['fs']}/{u['variant']} {suite}:{case} #{u['iteration']}: {u['message']}")
            continue
        where = ", ".join(sorted({f"{x['fs']}/{x['variant']}" for x in us}))
        lines.append(f"{suite}:{case} on {where} ({len(us)} units): {u['message']}")
    return lines
