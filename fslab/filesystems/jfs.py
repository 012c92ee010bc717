"""JFS (IBM's journaling filesystem); usually run in the qemu guest."""
from fslab.filesystems import register
from fslab.filesystems._guestkernel import GuestKernelDriver
from fslab.plan import FilesystemSpec


@register
class Jfs(GuestKernelDriver):
    name = fstype = "jfs"
    mkfs_tool = "mkfs.jfs"
    packages = ["jfsutils"]
    min_bytes = 16 << 20
    checker = ["jfs_fsck", "-n", "-f"]   # -n: report only, never write

    def mkfs_args(self, spec: FilesystemSpec) -> list[str]:
        return ["-q"]
