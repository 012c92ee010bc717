"""Every JSON document fslab writes says which fslab wrote it and its kind's schema number.

fio starts its JSON with its version, pyperf and asv version every file: a reader can then
tell a document it knows from one a newer program wrote. fslab's package version alone
says too little (0.1.0 while the decision went from schema 1 to 2), so each kind of
document has its own number, raised when a reader of the previous number would misread a
document (a key changes meaning or the shape changes); a key added that older readers may
ignore keeps the number. A document without "schema" is schema 1: what fslab wrote before
documents carried one. docs/formats.md lists the kinds with their histories:

- environment: a run's environment, the JSON of the store's runs.environment column.
  1: as written since the store began; "schema" added at 1.
- decision: `fslab decide --json`, stored in the run's environment and in `report --json`
  (fslab/decide/result.py). 1: no version key, "winner" the leader; 2: "schema_version",
  "winner" only for a winner, "leader", "stop_reason"; "schema" added at 2.
- report: `fslab report --json FILE`. 1; "schema" added at 1.
- compare: `fslab compare --json`. 1: a bare list of rows; 2: an object whose "rows" is
  that list.
- recommend: `fslab recommend --json`. 1; "schema" added at 1.
- features: `fslab features --json`. 1; "schema" added at 1.
- dry-run: `fslab run --dry-run --json`. 1; "schema" added at 1.
- list: `fslab list --json`. 1: a bare list of runs; 2: an object whose "runs" is that list.
- options: `fslab options --json`. 1: a bare list of options; 2: an object whose "options"
  is that list.
- doctor: `fslab doctor --json`. 1; "schema" added at 1.
- import: `fslab import --json`. 1; "schema" added at 1.
"""
from __future__ import annotations

from typing import Any, Mapping

from fslab import __version__
from fslab.errors import FslabError

# each kind's current schema number: what this fslab writes and the newest it reads
SCHEMAS: dict[str, int] = {
    "environment": 1,
    "decision": 2,
    "report": 1,
    "compare": 2,
    "recommend": 1,
    "features": 1,
    "dry-run": 1,
    "list": 2,
    "options": 2,
    "doctor": 1,
    "import": 1,
}


def stamp(kind: str, doc: Mapping[str, Any], schema: int | None = None) -> dict[str, Any]:
    """`doc` led by "fslab" (this version) and "schema" (its kind's current number, or the
    older `schema` a document is written back at)."""
    rest = {k: v for k, v in doc.items() if k not in ("fslab", "schema")}
    return {"fslab": __version__, "schema": SCHEMAS[kind] if schema is None else schema, **rest}


def schema_of(doc: Mapping[str, Any]) -> int:
    """A document's schema number: "schema", else the decision's older "schema_version",
    else 1 (written before documents carried one)."""
    return int(doc.get("schema", doc.get("schema_version", 1)))


def check(kind: str, doc: Mapping[str, Any], source: str) -> int:
    """The document's schema number, or one line refusing a newer one than this fslab
    reads (a newer fslab wrote it: its keys may mean what this one cannot know)."""
    found, reads = schema_of(doc), SCHEMAS[kind]
    if found > reads:
        raise FslabError(f"{source}: {kind} schema {found} is newer than this fslab reads "
                         f"({reads}); upgrade fslab")
    return found
