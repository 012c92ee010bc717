"""Deduplication probe: write the same random data twice, let the filesystem deduplicate
(ZFS: in-line with dedup=on; others: out-of-band via the FIDEDUPERANGE ioctl, which is what
duperemove uses), and measure the space given back."""
from __future__ import annotations

import errno
import fcntl
import os
import struct

from fslab.workloads.probes.base import (Enable, MiB, Probe, ProbeResult, random_bytes,
                                        used_bytes, write_file)
from fslab.filesystems.base import Driver, Instance
from fslab import metrics

SIZE = 16 * MiB
CHUNK = 8 * MiB                 # btrfs dedupes at most 16 MiB per call
FIDEDUPERANGE = 0xC0189436      # _IOWR(0x94, 54, struct file_dedupe_range)
_RANGE = struct.Struct("=QQHHI")          # src_offset, src_length, dest_count, reserved1, reserved2
_INFO = struct.Struct("=qQQiI")           # dest_fd, dest_offset, bytes_deduped, status, reserved


def dedupe_range(src_fd: int, dst_fd: int, offset: int, length: int) -> int:
    """One FIDEDUPERANGE call; returns bytes deduplicated (raises OSError on refusal)."""
    buf = bytearray(_RANGE.pack(offset, length, 1, 0, 0) + _INFO.pack(dst_fd, offset, 0, 0, 0))
    fcntl.ioctl(src_fd, FIDEDUPERANGE, buf)
    _, _, deduped, status, _ = _INFO.unpack_from(buf, _RANGE.size)
    if status < 0:
        raise OSError(-status, os.strerror(-status))
    if status == 1:   # FILE_DEDUPE_RANGE_DIFFERS
        raise OSError(errno.EINVAL, "the kernel found the ranges differ")
    return deduped


class DedupProbe(Probe):
    name = "dedup"
    feature = "deduplication"

    def enable(self, driver: Driver) -> Enable | str:
        return driver.dedup_enable() or Enable()

    def check(self, inst: Instance) -> ProbeResult:
        data = random_bytes(SIZE, seed=3)
        a, b = inst.mountpoint / "probe-a", inst.mountpoint / "probe-b"
        write_file(a, data)
        one_copy = used_bytes(inst, pool_level=True)
        write_file(b, data)
        two_copies = used_bytes(inst, pool_level=True)
        inline = inst.driver.dedup_enable()
        how = f"in-line ({inline.describe()})" if inline else ""
        deduped = None
        if inline is None:
            how = "out-of-band (FIDEDUPERANGE)"
            try:
                deduped = self._dedupe(a, b)
            except OSError as e:
                return ProbeResult(False, f"FIDEDUPERANGE refused: {e.strerror}")
        final = used_bytes(inst, pool_level=True)
        second_copy_cost = final - one_copy
        saved = SIZE - second_copy_cost
        ok = second_copy_cost < SIZE // 4
        detail = (f"{how}: a second identical {SIZE // MiB} MiB file costs "
                  f"{second_copy_cost / MiB:.1f} MiB" + ("" if ok else " (not deduplicated)"))
        ev = {"one_copy_used": one_copy, "two_copies_used": two_copies, "final_used": final,
              "bytes_deduped_reported": deduped}
        return ProbeResult(ok, detail, ev,
                           [metrics.measure("features", "dedup_saved_bytes", max(saved, 0))])

    @staticmethod
    def _dedupe(a, b) -> int:
        with open(a, "rb") as fa, open(b, "rb+") as fb:
            total = 0
            for off in range(0, SIZE, CHUNK):
                total += dedupe_range(fa.fileno(), fb.fileno(), off, min(CHUNK, SIZE - off))
            return total
