"""`fslab options [FS ...]`: each driver's catalogue of the options worth trying for speed."""
from __future__ import annotations

from typing import List, Optional

import typer

from fslab.commands._common import JsonOpt, console, input_errors
from fslab import filesystems

KIND_TEXT = {"mkfs": "mkfs", "mount": "mount -o", "property": "zfs property (-p)",
             "pool_property": "zpool property (-P)"}


def register(app: typer.Typer) -> None:
    app.command("options")(options)


def options(fs: Optional[List[str]] = typer.Argument(None, help="Filesystems (default: every "
                                                     "one with a catalogue)."),
            as_json: bool = JsonOpt) -> None:
    """The options that matter for performance, per filesystem: values worth trying, and
    whether each is safe or trades durability or a feature (and what).

    Use one in a run as a variant of its own: --fs 'ext4,ext4:wb[-o data=writeback]'.
    Entries marked for one implementation (OpenZFS) are refused by the other (zfs-fuse).
    """
    names = fs or [n for n in filesystems.names() if filesystems.get(n).catalogue]
    rows = []
    for name in names:
        with input_errors():   # an unknown name
            driver = filesystems.get(name)
        for o in driver.catalogue:
            rows.append({"filesystem": name, "option": o.key, "kind": o.kind,
                         "values": list(o.values), "class": o.safety, "effect": o.effect,
                         "trades": o.trades or None, "source": o.source,
                         "only_on": list(o.implementations) or None,
                         "how": [_how(o.kind, v) for v in o.values]})
    if as_json:
        import orjson
        from fslab import schema
        print(orjson.dumps(schema.stamp("options", {"options": rows}),
                           option=orjson.OPT_INDENT_2).decode())
        return
    from rich.markup import escape
    from rich.table import Table
    table = Table(title="Options worth trying (fslab options): safe = no durability or "
                  "feature cost; trade = gives up what it says",
                  title_justify="left", show_lines=False)
    for col in ("fs", "option", "where", "values", "class", "what it does", "what it trades",
                "source"):
        table.add_column(col, overflow="fold")
    last = None
    for r in rows:
        names = filesystems.get(r["filesystem"]).implementation_names
        only = (f" (only {', '.join(names.get(i, i) for i in r['only_on'])})"
                if r["only_on"] else "")
        table.add_row(r["filesystem"] if r["filesystem"] != last else "", escape(r["option"]),
                      KIND_TEXT[r["kind"]], escape(", ".join(r["values"])),
                      ("[yellow]trade[/]" if r["class"] == "trade" else "safe"),
                      escape(r["effect"] + only), escape(r["trades"] or ""), escape(r["source"]))
        last = r["filesystem"]
    console.print(table)
    console.print(escape("In a run: --fs 'NAME:VARIANT[-o MOUNT,OPTS -m \"MKFS ARGS\" "
                         "-p PROP=VALUE -P POOLPROP=VALUE]' (fslab run --help)."))


def _how(kind: str, value: str) -> str:
    """The --fs bracket words that set `value`."""
    flag = {"mkfs": "-m", "mount": "-o", "property": "-p", "pool_property": "-P"}[kind]
    return f'{flag} "{value}"' if " " in value else f"{flag} {value}"
