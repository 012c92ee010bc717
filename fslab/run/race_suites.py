"""What a decide races by default: the workloads whose I/O bears on the filesystem.

`fslab decide --suite pgbench` raced the geometric mean of TPC-B-like and select-only
while its own note said select-only, with the database in the page cache, measures
memory and CPU: half of what it averaged was no filesystem's doing. A suite named by
--suite (not a plan file's table, which is the user's own choice) races the workloads
whose I/O reaches the filesystem: select-only only where the database does not fit in
the page cache."""
from __future__ import annotations

import os

from fslab import plan as plans
from fslab.metrics.format import human
from fslab.workloads.apps.pgbench import DB_BYTES_PER_SCALE, SCALE, fits_in_memory


def ram_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def filesystem_workloads(plan: plans.Plan, ram: int) -> tuple[plans.Plan, list[str]]:
    """(the plan with each default pgbench suite narrowed to what bears on the filesystem,
    a line per narrowing saying why)."""
    suites, said = [], []
    for s in plan.suite:
        options = s.at_profile(plan.profile.name).options
        scale = options.get("scale", SCALE.get(plan.profile.name))
        if (s.kind == "pgbench" and not s.workloads and "read_only" not in options
                and isinstance(scale, int) and not isinstance(scale, bool)
                and fits_in_memory(scale * DB_BYTES_PER_SCALE, ram)):
            s = s.model_copy(update={"workloads": ["tpcb-like"]})
            said.append(f"pgbench: racing tpcb-like alone: at scale {scale} the database "
                        f"(~{human(scale * DB_BYTES_PER_SCALE, 'B')}) fits in the page cache "
                        f"({human(ram, 'B')} of RAM), where select-only measures memory and "
                        "CPU, not the filesystem (workloads = [\"select-only\"] in a plan "
                        "races it)")
        suites.append(s)
    return plan.model_copy(update={"suite": suites}), said
