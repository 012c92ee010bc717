"""Every variant's options side by side, one column per variant (as the Phoronix Test Suite
shows systems): what the plan asked (mkfs options, mount options, ZFS properties) and what
the kernel or `zfs get` showed in effect. Reports open with it (terminal, Markdown, HTML),
and so do the dry run and `fslab compare`.

The asked options come from each run's stored plan; what was in effect from the run's
environment (the first unit of each variant, else the options probe before the run).
A variant whose options differ between the runs shown gets a column per run.
"""
from __future__ import annotations

from rich.console import Console

from fslab.plan import FilesystemSpec, Plan

from typing import Any

from fslab.store.environment import RunEnvironment
from fslab import plan as plans

ROWS = (("mkfs", "mkfs options"), ("mount", "mount options"), ("properties", "ZFS properties"),
        ("pool_properties", "zpool properties"), ("in_effect", "in effect (read back)"))


def spec_options(spec: FilesystemSpec) -> dict[str, str]:
    """What a plan's [[filesystem]] asks, as text per row ('' = nothing asked)."""
    return {"mkfs": " ".join(spec.mkfs_options),
            "mount": ",".join(spec.mount_options),
            "properties": " ".join(f"{k}={v}" for k, v in spec.properties.items()),
            "pool_properties": " ".join(f"{k}={v}" for k, v in spec.pool_properties.items())}


def plan_columns(plan: Plan) -> list[tuple[str, dict[str, str]]]:
    """(label, options) per variant of a plan, nothing read back (the dry run)."""
    return [(f.label, spec_options(f)) for f in plan.filesystem]


def run_columns(runs: list[dict]) -> list[tuple[str, dict[str, str]]]:
    """(column title, options and what was in effect) per variant of these runs."""
    per_label: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for run in runs:
        text = run.get("plan")
        if not text:
            continue   # an imported run: no plan says what was asked
        try:
            plan = plans.parse(text, f"stored plan of {run.get('run_id')}")
        except Exception:
            continue
        env = RunEnvironment.of_run(run)
        for f in plan.filesystem:
            opts = spec_options(f)
            opts["in_effect"] = in_effect_text(env.in_effect(f.label) or env.probed_in_effect(f.label))
            per_label.setdefault(f.label, []).append((run.get("run_id", "?"), opts))
    columns = []
    for label, seen in per_label.items():
        asked = [{k: v for k, v in o.items() if k != "in_effect"} for _, o in seen]
        if all(a == asked[0] for a in asked):
            shown = [o["in_effect"] for _, o in seen if o["in_effect"]]
            columns.append((label, {**seen[0][1], "in_effect": shown[0] if shown else ""}))
        else:
            columns += [(f"{label} ({run_id})", o) for run_id, o in seen]
    return columns


def differing(runs: list[dict]) -> list[str]:
    """Variants whose asked options differ between these runs."""
    labels = [title.split(" (", 1)[0] for title, _ in run_columns(runs) if " (" in title]
    return list(dict.fromkeys(labels))


# where the dataset was mounted (a directory of the run's, gone after it): not an option
PLACES = {"mountpoint"}
# a dataset's properties that shape its speed, shown at their default values too (as the
# kernel's mount options show relatime): zfs-fuse's and OpenZFS's defaults differ.
# primarycache only where set: the cache policy sets it after the mount, and stores
# written before its value was read back again hold the mount's "all"
SPEED_PROPERTIES = {"recordsize", "compression", "atime", "sync"}


def in_effect_text(info: dict[str, Any] | None) -> str:
    """The mount's options as the kernel lists them, and properties set on the dataset."""
    if not info:
        return ""
    bits: list[str] = []
    for key in ("mount_options", "super_options"):
        for o in str(info.get(key) or "").split(","):
            if o and o not in bits:
                bits.append(o)
    for k, v in sorted((info.get("properties") or {}).items()):
        if k in PLACES:
            continue
        if isinstance(v, dict):   # a unit's record: every property with its source
            if v.get("source") == "local" or k in SPEED_PROPERTIES:
                bits.append(f"{k}={v.get('value')}")
        elif v is not None:       # the probe's: the asked ones only
            bits.append(f"{k}={v}")
    if not isinstance(next(iter((info.get("properties") or {}).values()), None), dict):
        # the probe read back the asked pool properties; a unit records all of them, unsourced
        bits += [f"{k}={v}" for k, v in sorted((info.get("pool_properties") or {}).items())
                 if v is not None]
    return ",".join(bits)


def table(columns: list[tuple[str, dict[str, str]]]) -> tuple[list[str], list[list[str]]]:
    """(header, rows): a row per kind of option that any column has, 'defaults' where a
    variant asks nothing of that kind; the read-back row only where something was read."""
    header = ["", *(title for title, _ in columns)]
    rows = []
    for key, name in ROWS:
        values = [o.get(key, "") for _, o in columns]
        if key in ("properties", "pool_properties", "in_effect") and not any(values):
            continue
        empty = "defaults" if key in ("mkfs", "mount") else "–"
        rows.append([name, *(v or empty for v in values)])
    return header, rows


# past this many filesystems the terminal table turns: one row per filesystem (27 columns
# of a decide's candidates folded every name and option into 3-letter slivers)
MOST_COLUMNS = 6


def print_table(columns: list[tuple[str, dict[str, str]]], console: Console,
                title: str = "Options per filesystem") -> None:
    if not columns:
        return
    from rich.markup import escape
    from rich.table import Table
    header, rows = table(columns)
    if len(columns) > MOST_COLUMNS:
        header, rows = (["filesystem", *(r[0] for r in rows)],
                        [[name, *(r[i + 1] for r in rows)] for i, name in enumerate(header[1:])])
    t = Table(title=title, title_justify="left", show_lines=False, pad_edge=False)
    for h in header:
        t.add_column(escape(h), overflow="fold")
    for r in rows:
        t.add_row(*(escape(x) for x in r))
    console.print(t)


def print_runs(runs: list[dict], console: Console) -> None:
    """The table of these runs' variants, and a warning for a variant whose options differ
    between them (its numbers then measure the option change too)."""
    print_table(run_columns(runs), console)
    for label in differing(runs):
        console.print(f"[yellow]note:[/] {label} has different options in these runs: its "
                      "comparison measures the option change too")


def markdown(runs: list[dict]) -> list[str]:
    columns = run_columns(runs)
    if not columns:
        return []
    header, rows = table(columns)
    cell = lambda v: (v or " ").replace("|", "\\|")
    lines = ["## Options per filesystem", "",
             "| " + " | ".join(cell(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return lines + [""]


def html_table(runs: list[dict]) -> dict | None:
    """{columns, rows} for the HTML report's table macro."""
    columns = run_columns(runs)
    if not columns:
        return None
    header, rows = table(columns)
    header[0] = "option"
    return {"columns": header, "rows": [dict(zip(header, r)) for r in rows]}
