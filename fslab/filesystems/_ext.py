"""Shared code of the ext2/ext3/ext4 drivers (each has its own module)."""
from __future__ import annotations

import time
from pathlib import Path

from fslab.filesystems.base import Driver, Instance
from fslab.plan import FilesystemSpec
from fslab.system.proc import first_line, run


class ExtDriver(Driver):
    packages = ["e2fsprogs"]
    journal = True

    @property
    def mkfs_tool(self) -> str:   # type: ignore[override]
        return f"mkfs.{self.name}"

    def mkfs_args(self, spec: FilesystemSpec) -> list[str]:
        args = ["-F", "-q"]
        user = " ".join(spec.mkfs_options)
        # Lazy inode-table/journal init would write in the background during the
        # measurements; do it at mkfs time instead, unless the user chose otherwise.
        if self.journal and spec.ext4_lazy_init == "mkfs" and "lazy_itable_init" not in user:
            args += ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
        return args

    def after_mount(self, inst: Instance) -> dict:
        user = " ".join(inst.spec.mkfs_options)
        if not self.journal:
            return {}
        if inst.spec.ext4_lazy_init == "wait" or "lazy_itable_init=1" in user:
            waited = wait_lazyinit()
            return {"lazy_init": f"waited {waited:.1f}s for ext4lazyinit to finish"}
        if "lazy_itable_init" in user:
            return {"lazy_init": "as given in mkfs_options"}
        return {"lazy_init": "disabled at mkfs (-E lazy_itable_init=0,lazy_journal_init=0)"}

    def versions(self) -> dict[str, str]:
        v = first_line(["mke2fs", "-V"])
        return {"mke2fs": v} if v else {}

    def check(self, inst: Instance) -> dict:
        r = run(["e2fsck", "-fn", inst.devices[0]], check=False, timeout=1800)
        return {"clean": r.returncode == 0, "exit": r.returncode,
                "output": (r.stdout + r.stderr)[-4000:]}


def wait_lazyinit(timeout: float = 600) -> float:
    """Block until no ext4lazyinit kernel thread is running (mmtests' approach)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        busy = False
        for comm in Path("/proc").glob("[0-9]*/comm"):
            try:
                if comm.read_text().strip() == "ext4lazyinit":
                    busy = True
                    break
            except OSError:
                continue
        if not busy:
            break
        time.sleep(0.5)
    return time.monotonic() - t0
