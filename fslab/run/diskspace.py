"""Room for the loop images: a unit's image is sparse, but a case sized from its data
(pgbench's scale, RocksDB's keys) writes most of it, and a work directory that fills
up mid-run fails units late and can take the host's other work down with it. A plan
whose largest image does not fit in the work directory's free space is refused before
any run row (pgbench scale 3000 planned a 142 GiB image with 75 GiB free, and started)."""
from __future__ import annotations

import shutil
from pathlib import Path

from fslab.errors import FslabError
from fslab.filesystems import get as driver_get
from fslab.metrics.format import human
from fslab.run.schedule import Schedule


def largest_image(schedule: Schedule) -> tuple[int, str] | None:
    """(bytes, 'fs suite:case') of the largest loop image one unit of the plan makes (one
    unit's image exists at a time), or None when no case can tell before it runs."""
    best: tuple[int, str] | None = None
    profile = schedule.plan.profile
    for spec, suite, case in schedule.pairs:
        size = suite.image_bytes(case, spec, profile)
        if size is None:
            continue
        size = max(size, driver_get(spec.name).min_bytes)
        if best is None or size > best[0]:
            best = (size, f"{spec.label} {suite.name}:{case.name}")
    return best


def check_room(schedule: Schedule, directory: Path) -> None:
    """Refuse (exit 2) a plan whose largest image is more than `directory` has free."""
    need = largest_image(schedule)
    if need is None:
        return
    existing = next(d for d in [directory, *directory.parents] if d.exists())  # made later
    free = shutil.disk_usage(existing).free
    if need[0] > free:
        raise FslabError(
            f"{need[1]} needs a {human(need[0], 'B')} loop image, and {directory} has "
            f"{human(free, 'B')} free: make the case smaller (its scale, keys or rows), or "
            "give --workdir on a filesystem with room", code=2)
