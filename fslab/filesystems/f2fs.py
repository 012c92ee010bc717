"""F2FS (flash-friendly, log-structured); usually run in the qemu guest."""
from fslab.filesystems import register
from fslab.filesystems._guestkernel import GuestKernelDriver
from fslab.plan import FilesystemSpec


@register
class F2fs(GuestKernelDriver):
    name = fstype = "f2fs"
    mkfs_tool = "mkfs.f2fs"
    packages = ["f2fs-tools"]
    min_bytes = 64 << 20
    checker = ["fsck.f2fs", "-f", "--dry-run"]

    def mkfs_args(self, spec: FilesystemSpec) -> list[str]:
        return ["-f", "-q"]
