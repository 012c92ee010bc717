"""Live checks of feature claims, one module per probe; PROBES lists them in matrix order."""
from __future__ import annotations

from fslab.features.probes.base import Enable, Probe, ProbeResult
from fslab.features.probes.checksum import ChecksumProbe
from fslab.features.probes.compression import CompressionProbe
from fslab.features.probes.dedup import DedupProbe
from fslab.features.probes.fallocate import FallocateProbe
from fslab.features.probes.grow import GrowProbe
from fslab.features.probes.inline import InlineProbe
from fslab.features.probes.reflink import ReflinkProbe
from fslab.features.probes.snapshot import SnapshotProbe

PROBES: dict[str, Probe] = {p.name: p for p in (
    ChecksumProbe(), SnapshotProbe(), GrowProbe(), DedupProbe(), CompressionProbe(),
    ReflinkProbe(), FallocateProbe(), InlineProbe())}

__all__ = ["PROBES", "Enable", "Probe", "ProbeResult"]
