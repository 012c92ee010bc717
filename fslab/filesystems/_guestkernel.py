"""Shared code of drivers for filesystems many host kernels lack (f2fs, jfs, reiserfs, nilfs2).

They are ordinary drivers: where the kernel has them (inside fslab's qemu guest,
or a host that has the module) they run like any other. Where it does not, they
say so and whether the guest target can run them instead ("via guest").
"""
from __future__ import annotations

from fslab.filesystems.base import Availability, Driver, Instance, kernel_has
from fslab.system.proc import first_line, is_root, run, which
from fslab.guest import capable


class GuestKernelDriver(Driver):
    checker: list[str] | None = None   # read-only check argv, device appended

    def available(self) -> Availability:
        if is_root() and kernel_has(self.fstype) and (not self.mkfs_tool or which(self.mkfs_tool)):
            return Availability(True, how="host kernel")
        here = super().available()
        if here.ok:
            return here
        why_guest = capable()
        if why_guest is None:
            return Availability(False, how="via guest",
                                why=f"{here.why}; runs inside fslab's qemu guest (--target guest)",
                                packages=self.packages, guest=True)
        return Availability(False, why=f"{here.why}; the qemu guest cannot run either: {why_guest}",
                            packages=self.packages)

    def versions(self) -> dict[str, str]:
        v = first_line([self.mkfs_tool, "-V"]) if self.mkfs_tool else None
        return {self.mkfs_tool: v} if v else {}

    def check(self, inst: Instance) -> dict:
        if not self.checker:
            return super().check(inst)
        r = run([*self.checker, inst.devices[0]], check=False, timeout=1800, input="")
        return {"clean": r.returncode == 0, "exit": r.returncode, "checker": " ".join(self.checker),
                "output": (r.stdout + r.stderr)[-4000:]}
