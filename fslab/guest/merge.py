"""Bring a guest's results into the host store, under the host's run id.

The guest ran a normal `fslab run` into its own store. Its units and records
are copied with run_id replaced by the host's, `host` set to the guest label
("guest-tcg" or "guest-kvm", so analysis compares guest filesystems only with
each other), and every artifact path moved under runs/<run_id>/<label>/, where
the raw files are copied too. Re-merging the same guest run replaces its rows.
"""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from fslab.errors import FslabError
from fslab.store import Store
from fslab.store.environment import RunEnvironment


def merge(store: Store, run_id: str, guest_results: Path, label: str) -> dict:
    """Copy the guest store's (only) run into `store` as part of `run_id`.

    Returns {"units": n, "records": n, "guest_run_id": ..., "status": ...,
    "guest_environment": RunEnvironment}.
    """
    db_path = Path(guest_results) / "fslab.sqlite"
    if not db_path.exists():
        raise FslabError(f"the guest wrote no results store ({db_path} missing)")
    src = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    src.row_factory = sqlite3.Row
    try:
        run = src.execute("SELECT run_id, status, environment AS environment_json FROM runs "
                          "ORDER BY started DESC LIMIT 1").fetchone()
        if run is None:
            raise FslabError("the guest's results store holds no run")
        grun = run["run_id"]
        # read first: an environment this fslab cannot read is refused before anything is copied
        guest_environment = RunEnvironment.from_json(run["environment_json"], f"{db_path} run {grun}")
        old, new = f"runs/{grun}/", f"runs/{run_id}/{label}/"

        def remap(path: str | None) -> str | None:
            if path and path.startswith(old):
                return new + path[len(old):]
            if path and path == old.rstrip("/"):
                return new.rstrip("/")
            return path

        units = [dict(r) for r in src.execute("SELECT * FROM units WHERE run_id=?", (grun,))]
        records = [dict(r) for r in src.execute("SELECT * FROM records WHERE run_id=?", (grun,))]
    finally:
        src.close()

    raw = Path(guest_results) / "runs" / grun
    if raw.exists():
        for part in raw.iterdir():   # a unit the guest (re)ran replaces its files whole
            dest = store.root / new / part.name
            if part.is_dir():
                shutil.rmtree(dest, ignore_errors=True)
                shutil.copytree(part, dest)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(part, dest)

    for u in units:
        u.update(run_id=run_id, host=label, artifact_dir=remap(u.get("artifact_dir")))
    for r in records:
        r.update(run_id=run_id, host=label, artifact=remap(r.get("artifact")))
    with store.tx() as db:
        db.execute("DELETE FROM records WHERE run_id=? AND host=?", (run_id, label))
        db.execute("DELETE FROM units WHERE run_id=? AND host=?", (run_id, label))
        for table, rows in (("units", units), ("records", records)):
            if not rows:
                continue
            cols = list(rows[0])
            sql = (f"INSERT INTO {table} ({', '.join(f'{chr(34)}{c}{chr(34)}' for c in cols)}) "
                   f"VALUES ({', '.join('?' * len(cols))})")
            db.executemany(sql, [tuple(r[c] for c in cols) for r in rows])
    return {"units": len(units), "records": len(records), "guest_run_id": grun,
            "status": run["status"],
            "guest_environment": guest_environment}


# what the guest's fslab recorded that describes the measurements themselves, so the host's
# reports read it as for a local run: the tools that made them (OpenZFS in the guest), the
# options in effect, and each suite's own words (cache policy, copy mode, which history an
# aging run replayed and what stood in for it)
GUEST_FACTS = ("tools", "filesystems", "workloads")


def host_environment(guest_environment: RunEnvironment | dict) -> dict:
    """The part of the guest run's environment the host run's takes over as its own."""
    env = RunEnvironment.of(guest_environment)
    return {k: getattr(env, k) for k in GUEST_FACTS}     # RunEnvironment's typed readers
