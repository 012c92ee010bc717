"""XFS on the host kernel."""
from fslab.filesystems import register
from fslab.filesystems.base import Driver, Instance
from fslab.plan import FilesystemSpec
from fslab.system.proc import first_line, run


@register
class Xfs(Driver):
    name = fstype = "xfs"
    mkfs_tool = "mkfs.xfs"
    packages = ["xfsprogs"]
    min_bytes = 300 << 20     # xfsprogs >= 5.19 refuses smaller filesystems

    def mkfs_args(self, spec: FilesystemSpec) -> list[str]:
        return ["-f", "-q"]

    def versions(self) -> dict[str, str]:
        v = first_line(["mkfs.xfs", "-V"])
        return {"mkfs.xfs": v} if v else {}

    def check(self, inst: Instance) -> dict:
        r = run(["xfs_repair", "-n", inst.devices[0]], check=False, timeout=1800)
        return {"clean": r.returncode == 0, "exit": r.returncode,
                "output": (r.stdout + r.stderr)[-4000:]}
