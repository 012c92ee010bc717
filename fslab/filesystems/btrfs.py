"""Btrfs on the host kernel; with devices > 1 it makes a raid1 across loop devices."""
from fslab.filesystems import register
from fslab.filesystems.base import Driver, Instance
from fslab.system.proc import first_line, run


@register
class Btrfs(Driver):
    name = fstype = "btrfs"
    mkfs_tool = "mkfs.btrfs"
    packages = ["btrfs-progs"]
    min_bytes = 128 << 20

    def mkfs(self, inst: Instance) -> None:
        args = ["-f", "-q"]
        user = " ".join(inst.spec.mkfs_options)
        if len(inst.devices) > 1 and "-d" not in user.split() and "--data" not in user:
            args += ["-d", "raid1", "-m", "raid1"]
        run(["mkfs.btrfs", *args, *inst.spec.mkfs_options, *inst.devices], timeout=1800)
        if len(inst.devices) > 1:
            run(["btrfs", "device", "scan", *inst.devices])

    def versions(self) -> dict[str, str]:
        v = first_line(["mkfs.btrfs", "--version"])
        return {"mkfs.btrfs": v} if v else {}

    def effective_options(self, inst: Instance) -> dict:
        info = super().effective_options(inst)
        r = run(["btrfs", "filesystem", "df", "-b", str(inst.mountpoint)], check=False)
        if r.ok:
            info["profiles"] = r.stdout.strip()
        return info

    def check(self, inst: Instance) -> dict:
        r = run(["btrfs", "check", "--readonly", inst.devices[0]], check=False, timeout=1800)
        return {"clean": r.returncode == 0, "exit": r.returncode,
                "output": (r.stdout + r.stderr)[-4000:]}
