"""The rows of the feature matrix: what a user asks about a filesystem, by category.

Order here is the order everywhere (terminal, Markdown, JSON, report). A row with
a `probe` can be checked live on a loop image (fslab.workloads.probes).
"""
from __future__ import annotations

from dataclasses import dataclass
from fslab.errors import FslabError


@dataclass(frozen=True)
class Feature:
    key: str
    category: str
    title: str
    probe: str | None = None    # name of the live check, if there is one
    value: bool = False         # the answer is a quantity (max sizes): show the claim's note
    ranked: bool = True         # False: "yes" is a design choice, not an advantage


CATEGORIES = ("reliability", "scalability", "storage capacity", "performance-related")

FEATURES: tuple[Feature, ...] = (
    Feature("data_checksums", "reliability", "data checksums", probe="checksum"),
    Feature("metadata_checksums", "reliability", "metadata checksums"),
    Feature("copy_on_write", "reliability", "copy-on-write"),
    Feature("journaling", "reliability", "journaling mode", ranked=False),
    Feature("snapshots", "reliability", "snapshots", probe="snapshot"),
    Feature("scrub", "reliability", "scrub / self-heal"),
    Feature("raid", "reliability", "RAID / redundancy built in"),
    Feature("resilvering", "reliability", "resilvering"),
    Feature("online_grow", "scalability", "online grow", probe="grow"),
    Feature("online_shrink", "scalability", "online shrink"),
    Feature("max_file_size", "scalability", "max file size", value=True),
    Feature("max_volume_size", "scalability", "max volume size", value=True),
    Feature("extents", "scalability", "extents", ranked=False),
    Feature("delayed_allocation", "scalability", "delayed allocation"),
    Feature("deduplication", "storage capacity", "deduplication", probe="dedup"),
    Feature("compression", "storage capacity", "compression", probe="compression"),
    Feature("reflinks", "storage capacity", "reflinks", probe="reflink"),
    Feature("fallocate", "storage capacity", "preallocation (fallocate)", probe="fallocate"),
    Feature("inline_small_files", "storage capacity", "inline small files", probe="inline"),
    Feature("reserved_space", "storage capacity", "reserved space by default"),
    Feature("direct_io", "performance-related", "direct I/O"),
    Feature("trim", "performance-related", "TRIM / discard"),
    Feature("tunable_block_size", "performance-related", "tunable record/block size"),
)

BY_KEY = {f.key: f for f in FEATURES}
BY_PROBE = {f.probe: f for f in FEATURES if f.probe}


def feature(key: str) -> Feature:
    try:
        return BY_KEY[key]
    except KeyError:
        raise FslabError(f"unknown feature {key!r}; known: {', '.join(BY_KEY)}") from None
