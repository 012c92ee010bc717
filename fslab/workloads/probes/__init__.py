"""Live checks of feature claims (the `features` suite, fslab/workloads/features.py), one module per probe; PROBES lists them in matrix order."""
from __future__ import annotations

from fslab.workloads.probes.base import Enable, Probe, ProbeResult
from fslab.workloads.probes.checksum import ChecksumProbe
from fslab.workloads.probes.compression import CompressionProbe
from fslab.workloads.probes.dedup import DedupProbe
from fslab.workloads.probes.fallocate import FallocateProbe
from fslab.workloads.probes.grow import GrowProbe
from fslab.workloads.probes.inline import InlineProbe
from fslab.workloads.probes.reflink import ReflinkProbe
from fslab.workloads.probes.snapshot import SnapshotProbe

PROBES: dict[str, Probe] = {p.name: p for p in (
    ChecksumProbe(), SnapshotProbe(), GrowProbe(), DedupProbe(), CompressionProbe(),
    ReflinkProbe(), FallocateProbe(), InlineProbe())}

__all__ = ["PROBES", "Enable", "Probe", "ProbeResult"]
