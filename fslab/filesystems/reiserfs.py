"""ReiserFS 3.6; usually run in the qemu guest (deprecated upstream, still in Debian 12's kernel)."""
from fslab.filesystems import register
from fslab.filesystems._guestkernel import GuestKernelDriver
from fslab.plan import FilesystemSpec


@register
class Reiserfs(GuestKernelDriver):
    name = fstype = "reiserfs"
    mkfs_tool = "mkfs.reiserfs"
    packages = ["reiserfsprogs"]
    min_bytes = 64 << 20       # the default journal alone takes 32 MiB
    # --check only reads; --yes answers its "Do you want to run this program?" prompt
    checker = ["reiserfsck", "--check", "--yes", "-q"]

    def mkfs_args(self, spec: FilesystemSpec) -> list[str]:
        return ["-ff", "-q"]   # -f twice: no confirmation even on a whole device
