"""tmpfs: memory-backed, no device; a reference point, not a disk filesystem."""
from fslab.filesystems import register
from fslab.filesystems.base import ATIME, Availability, Driver, Instance, Option
from fslab.system.proc import is_root, run


@register
class Tmpfs(Driver):
    name = fstype = "tmpfs"
    needs_device = False
    dm_refusal = "has no block device"
    catalogue = (
        ATIME,
        Option("huge", "mount", ("huge=always", "huge=within_size"), "safe",
               "transparent huge pages back the files: fewer TLB misses on large files",
               "tmpfs(5)"),
    )

    def available(self) -> Availability:
        if not is_root():
            return Availability(False, why="needs root (or use --mountpoint DIR)")
        return Availability(True, how="host kernel (memory)")

    def mkfs(self, inst: Instance) -> None:
        pass   # nothing to format; the size is a mount option

    def mount(self, inst: Instance) -> None:
        opts = [f"size={inst.size_bytes}", *inst.spec.mount_options]
        run(["mount", "-t", "tmpfs", "-o", ",".join(opts), "fslab-tmpfs", str(inst.mountpoint)])

    def cold_cache(self, inst: Instance) -> dict:
        # unmounting tmpfs would destroy the data: there is no colder cache
        return {"method": "none (tmpfs lives in the page cache)", "mounted": True}
