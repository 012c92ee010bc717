"""NILFS2 (log-structured, continuous snapshots); usually run in the qemu guest.

Mounting starts nilfs_cleanerd, its garbage collector, which runs during the
measurements: that is how NILFS2 is used, so it is part of what is measured.
"""
from fslab.filesystems import register
from fslab.filesystems._guestkernel import GuestKernelDriver
from fslab.filesystems.base import Instance
from fslab.plan import FilesystemSpec


@register
class Nilfs2(GuestKernelDriver):
    name = fstype = "nilfs2"
    mkfs_tool = "mkfs.nilfs2"
    packages = ["nilfs-tools"]
    min_bytes = 160 << 20      # mkfs.nilfs2 needs 128 MiB of segments plus its super blocks

    def mkfs_args(self, spec: FilesystemSpec) -> list[str]:
        return ["-f", "-q"]

    def check(self, inst: Instance) -> dict:
        return {"clean": None, "output": "nilfs-tools ships no offline checker for nilfs2"}
