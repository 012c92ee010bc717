"""Hosts compared like filesystems: 'nvme vs sata on ext4, fio:randread read_iops: +41%'.

The statistics are the engine's (fslab.analysis with host as the factor); this module
only picks the headline metrics and words the pairs. The "all" host (fio's sum over
every host in parallel mode) is a different quantity from any one host: it is shown
in the per-host table but never ranked against a host.
"""
from __future__ import annotations

from typing import Iterable

from fslab.store import Store

import math

import orjson
import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fslab.analysis import analyze
from fslab.analysis.pairwise import PairRow, verdict
from fslab.records import AGGREGATE_HOST, level_label
from fslab.metrics.answer import throughput_metrics
from fslab.metrics.format import human, human_spread
from fslab.store.environment import RunEnvironment

# the metrics hosts are compared on: fio's read and write rates, as the catalogue declares them
THROUGHPUT = throughput_metrics("fio")


def host_order(records: pd.DataFrame, preferred: list[str] | None = None) -> list[str]:
    found = [h for h in pd.unique(records["host"]) if h != AGGREGATE_HOST]
    first = [h for h in (preferred or []) if h in found]
    return first + sorted(h for h in found if h not in first)


def host_comparisons(records: pd.DataFrame, order: list[str] | None = None,
                     metrics: tuple[str, ...] = THROUGHPUT) -> pd.DataFrame:
    """One row per (fs variant, case, metric, pair of hosts): medians, change, verdict."""
    per_host = records[(records["host"] != AGGREGATE_HOST) & records["metric"].isin(metrics)]
    hosts = host_order(per_host, order)
    if len(hosts) < 2:
        return pd.DataFrame()
    a = analyze(per_host, factor="host", order=hosts, regression=False)
    if a.pairs.empty:
        return a.pairs
    pairs = a.pairs.copy()
    pairs["sentence"] = [sentence(r) for r in pairs.to_dict("records")]
    return pairs


def sentence(r: dict) -> str:
    """'xfs · fio:randread read_iops: nsB vs nsA +41.2% (p=0.008, Cliff's δ=0.90 large)'."""
    fs = level_label(r["fs"], r["variant"])
    change = "" if math.isnan(r["change_pct"]) else f"{r['change_pct']:+.1f}%"
    said = verdict(PairRow.of(r))
    if said == "~":
        said = f"{change} ~ not significant" + (f" ({r['note']})" if r.get("note") else "")
    return f"{r['other']} vs {r['baseline']} on {fs}, {r['suite']}:{r['case']} {r['metric']}: {said}"


def host_table(records: pd.DataFrame, metric_pick: Iterable[str] = THROUGHPUT) -> Table:
    """Per (fs variant, case): each host's median (min–max) of the first headline metric."""
    hosts = host_order(records)
    if AGGREGATE_HOST in set(records["host"]):
        hosts.append(AGGREGATE_HOST)
    t = Table(title="per host: median (min – max) over rounds", title_justify="left")
    for col in ("filesystem", "workload", "metric", *hosts):
        t.add_column(col, justify="right" if col in hosts else "left")
    for (fs, variant, case, params), g in records.groupby(["fs", "variant", "case", "params"],
                                                          sort=True):
        metric = next((m for m in metric_pick if m in set(g["metric"])), None)
        if metric is None:
            continue
        m = g[g["metric"] == metric]
        cells = []
        for h in hosts:
            v = m[m["host"] == h]["value"]
            unit = m["unit"].iloc[0]
            cells.append("-" if v.empty else human_spread(v.median(), v.min(), v.max(), unit)
                         if len(v) > 1 else human(v.median(), unit))
        label = level_label(fs, variant)
        extra = " ".join(f"{k}={v}" for k, v in orjson.loads(params).items() if k != "workload")
        t.add_row(label, f"{case} {extra}".strip(), metric, *cells)
    return t


def print_host_comparison(records: pd.DataFrame, console: Console,
                          order: list[str] | None = None) -> None:
    """'h2 vs h1 on ext4, fio:randread read_iops: +41%' lines; nothing with one host."""
    pairs = host_comparisons(records, order)
    if pairs.empty:
        return
    console.print("[bold]hosts compared[/] (Holm-corrected p over the pairs of each metric; "
                  "'~' = no significant difference):")
    for s in pairs["sentence"]:
        console.print(f"  {escape(s)}")


def print_host_summary(store: Store, run_id: str, console: Console) -> None:
    records = store.records(run_id)
    failed = [u for u in store.units(run_id) if u["status"] == "failed"]
    if records.empty:
        console.print("no measurements stored" + (f"; {len(failed)} units failed" if failed else ""))
        return
    hosts = RunEnvironment.of_run(store.run(run_id)).hosts
    console.print(host_table(records))
    print_host_comparison(records, console, hosts)
    for u in failed[:10]:
        console.print(f"[red]failed[/] {u['host']} {u['fs']}/{u['variant']} {u['suite']}:"
                      f"{u['case']} #{u['iteration']}: {escape(u['message'] or '')}")
    console.print(f"raw files (job files, client-mode fio JSON, logs): {store.run_dir(run_id)}")
