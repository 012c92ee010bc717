"""Inline small files probe: write a 100-byte file and ask FIEMAP (fslab.system.fiemap) whether its
data lives inside the metadata (FIEMAP_EXTENT_DATA_INLINE) instead of a data block."""
from __future__ import annotations

from fslab.system import fiemap
from fslab.workloads.probes.base import Enable, Probe, ProbeResult, random_bytes, write_file
from fslab.filesystems.base import Driver, Instance

SMALL = 100


class InlineProbe(Probe):
    name = "inline"
    feature = "inline_small_files"

    def enable(self, driver: Driver) -> Enable | str:
        return driver.inline_data_enable()

    def check(self, inst: Instance) -> ProbeResult:
        path = inst.mountpoint / "probe-small"
        write_file(path, random_bytes(SMALL, seed=4))
        try:
            exts = fiemap.extents(str(path))
        except fiemap.FiemapUnsupported as e:
            return ProbeResult(None, f"cannot observe: {e.strerror} on this filesystem")
        if not exts:
            return ProbeResult(None, "cannot observe: FIEMAP maps no extents for a written file")
        inline = any(x.flags & fiemap.EXTENT_DATA_INLINE for x in exts)
        detail = (f"a {SMALL}-byte file: FIEMAP reports its data inline in metadata" if inline else
                  f"a {SMALL}-byte file got a data block of its own (no inline flag)")
        return ProbeResult(inline, detail, {"extent_flags": [x.flags for x in exts]})
