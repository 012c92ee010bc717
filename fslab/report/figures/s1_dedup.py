"""S1: the dedup and space table, small-file overhead and large-file creation, per filesystem.

Space consumed is the drop in space available to a user (it shows ZFS's dedup
savings, which the dataset's statvfs `used` does not); zpool ALLOC and DEDUP
are the pool's own view. CPU columns are system-wide (/proc/stat), since
zfs-fuse and kernel threads do the work outside the measured process.
"""
from __future__ import annotations

from fslab.report.figures import FigureContext, Section
from fslab.report.figures._study import html_table, level_table

SUITES = ("dedup", "smallfiles", "largefile")

COLUMNS = {
    "dedup": [("logical_bytes", "logical"), ("space_consumed", "space consumed"),
              ("statvfs_used", "statvfs used"), ("zpool_alloc", "zpool ALLOC"),
              ("zpool_dedupratio", "zpool DEDUP"), ("space_saving_ratio", "logical / consumed"),
              ("space_overhead_pct", "overhead %"),
              ("setup_time", "setup time"), ("setup_throughput", "setup (logical)"),
              ("setup_throughput_physical", "setup (physical)"),
              ("cpu_busy_setup_system_wide", "CPU setup (system)"),
              ("read_bw", "read (4 KiB, 4 jobs, random files)"), ("cpu_busy_read_system_wide", "CPU read (system)")],
    "smallfiles": [("logical_bytes", "logical"), ("space_consumed", "space consumed"),
                   ("space_overhead", "consumed − logical"), ("space_overhead_pct", "overhead %"),
                   ("space_overhead_per_file", "per file"), ("create_time", "create time")],
    "largefile": [("total_time", "total time"), ("write_throughput", "write (logical)"),
                  ("write_throughput_physical", "write (physical)"),
                  ("space_consumed", "space consumed"), ("zpool_alloc", "zpool ALLOC"),
                  ("zpool_capacity_pct", "zpool CAP"), ("zpool_dedupratio", "zpool DEDUP"),
                  ("cpu_busy_system_wide", "CPU (system)")],
}
TITLES = {"dedup": ("S1 deduplication and space",
                    "Medians over rounds. Only a ZFS variant with dedup=on deduplicates "
                    "inline; ext4 and xfs have no dedup, btrfs only offline (duperemove, not run "
                    "here), so their logical/consumed ratio stays near 1 by design."),
          "smallfiles": ("S1 small-file space overhead",
                         "Space consumed minus logical bytes for S3's file tree; medians."),
          "largefile": ("S1 large-file creation",
                        "2 files, one writer each, 128 KiB writes (vdbench's default), to the "
                        "last fsync; medians. Logical = bytes written / time; physical = space "
                        "consumed / time (the study's numbers).")}


def sections(ctx: FigureContext) -> list[Section]:
    levels = [lv for lv in ctx.analysis.levels if lv in set(ctx.summary["level"])]
    rows, columns = level_table(ctx.summary, levels, COLUMNS[ctx.suite])
    if not rows:
        return []
    title, caption = TITLES[ctx.suite]
    return [Section(title, html_table(rows, columns, ctx.suite), caption)]
