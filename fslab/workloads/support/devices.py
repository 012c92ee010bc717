"""What reached a filesystem's devices during a step, next to the bytes the step moved.

For suites that move file data without fio (tasks, largefile, smallfiles, dedup's
setup): the block devices' own counters (fslab/system/devstat.py) from the start
of a step to its end, and the same shares fio units record (docs/cache-and-
accounting.md): write_amplification = device bytes written / bytes the step wrote,
device_read_share = device bytes read / bytes the step read. A share far below 1
says the step's time measured memory (a clone, a cached read, data still dirty),
and the report flags it.
"""
from __future__ import annotations

from functools import lru_cache

from fslab.metrics import Catalogue
from fslab.metrics.declared import step_devices
from fslab.records import Measurement
from fslab.system import devstat


@lru_cache(maxsize=None)
def _declared(prefix: str) -> Catalogue:
    """The step's device counters as the catalogue declares them, named with `prefix`."""
    return Catalogue(step_devices(prefix))


class DeviceAccount:
    """`acct = DeviceAccount(inst.devices)`, do the step, `acct.measurements(...)`."""

    def __init__(self, devices: list[str]):
        self.devices = devstat.block_devices(list(devices))
        self.start = devstat.read(self.devices)

    def measurements(self, case: str | None = None, artifact: str | None = None,
                     wrote: int = 0, read: int = 0, prefix: str = "") -> list[Measurement]:
        """Device bytes and I/Os since the start; the shares of `wrote` and `read` bytes
        when given. Nothing when the filesystem has no block device to count."""
        if not self.devices:
            return []
        d = devstat.read(self.devices) - self.start

        def m(metric, value):
            return _declared(prefix).measure(prefix + metric, value, artifact, case=case)
        out = [m("device_read_bytes", d.read_bytes), m("device_write_bytes", d.write_bytes),
               m("device_ios", d.ios)]
        if wrote:
            out.append(m("write_amplification", d.write_bytes / wrote))
        if read:
            out.append(m("device_read_share", d.read_bytes / read))
        return out
