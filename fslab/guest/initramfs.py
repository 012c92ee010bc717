"""Stage 1 of the guest boot: a busybox initramfs that mounts the rootfs disk.

Debian builds virtio and ext4 as modules, so the kernel cannot mount the rootfs
by itself. This initramfs holds a static busybox and just those modules (in
dependency order, resolved from the rootfs's modules.dep), loads them, mounts
/dev/vda and switch_roots into it. It also answers the acceleration probe
(`fslab.probe` on the kernel command line): print a marker and power off, which
shows the guest reached user space without needing any disk.
"""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

from fslab.errors import FslabError

PROBE_MARKER = "FSLAB-PROBE-OK"

# What stage 1 needs; everything else is loaded later from the rootfs with modprobe.
ROOT_MODULES = ["virtio_pci", "virtio_blk", "crc32c_generic", "ext4"]

INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
if grep -q fslab.probe /proc/cmdline; then
  echo "__MARKER__"
  poweroff -f
fi
for m in $(cat /modules.order); do insmod "/modules/$m" 2>/dev/null; done
mkdir -p /newroot
i=0
while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
if ! mount -t ext4 -o rw /dev/vda /newroot; then
  echo "fslab-initramfs: cannot mount the rootfs /dev/vda"; poweroff -f
fi
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot __GUEST_INIT__
""".replace("__MARKER__", PROBE_MARKER)


def busybox_static() -> str | None:
    """Path of a statically linked busybox, or None (a dynamic one cannot run in the initramfs)."""
    for p in ("/bin/busybox", "/usr/bin/busybox"):
        if os.path.exists(p) and not _has_interpreter(p):
            return p
    return None


def _has_interpreter(path: str) -> bool:
    """True if the ELF file asks for a dynamic loader (has a PT_INTERP program header)."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:   # only 64-bit ELF matters here
            return True
        phoff, = struct.unpack_from("<Q", head, 32)
        phentsize, phnum = struct.unpack_from("<HH", head, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    return any(struct.unpack_from("<I", table, i * phentsize)[0] == 3 for i in range(phnum))


def resolve(modules_dir: Path, wanted: list[str]) -> list[str]:
    """Relative paths of `wanted` modules and their dependencies, dependencies first."""
    deps: dict[str, list[str]] = {}
    by_name: dict[str, str] = {}
    for line in (modules_dir / "modules.dep").read_text().splitlines():
        mod, _, rest = line.partition(":")
        deps[mod] = rest.split()
        by_name[Path(mod).name.split(".ko")[0].replace("-", "_")] = mod
    order: list[str] = []

    def visit(mod: str) -> None:
        if mod in order:
            return
        for d in deps.get(mod, []):
            visit(d)
        order.append(mod)

    builtin = (modules_dir / "modules.builtin").read_text() if (modules_dir / "modules.builtin").exists() else ""
    for name in wanted:
        mod = by_name.get(name.replace("-", "_"))
        if mod is None:
            if f"/{name}.ko" in builtin:
                continue   # built into this kernel
            raise FslabError(f"kernel module {name} not found in {modules_dir}")
        visit(mod)
    return order


def build(out: Path, modules_dir: Path, scratch: Path,
          guest_init: str = "/usr/local/sbin/fslab-guest-init") -> None:
    """Write a gzip'd newc cpio initramfs to `out`."""
    busybox = busybox_static()
    if busybox is None:
        raise FslabError("no static busybox (apt-get install busybox-static)")
    shutil.rmtree(scratch, ignore_errors=True)
    for d in ("bin", "dev", "proc", "sys", "modules", "newroot"):
        (scratch / d).mkdir(parents=True)
    shutil.copy2(busybox, scratch / "bin" / "busybox")
    order = resolve(modules_dir, ROOT_MODULES)
    names = []
    for rel in order:
        name = Path(rel).name
        shutil.copy2(modules_dir / rel, scratch / "modules" / name)
        names.append(name)
    (scratch / "modules.order").write_text("\n".join(names) + "\n")
    init = scratch / "init"
    init.write_text(INIT.replace("__GUEST_INIT__", guest_init))
    init.chmod(0o755)
    files = subprocess.run(["find", "."], cwd=scratch, capture_output=True, text=True,
                           check=True, timeout=300).stdout
    with open(out, "wb") as f:
        cpio = subprocess.Popen(["cpio", "-o", "-H", "newc", "--quiet"], cwd=scratch,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        gz = subprocess.Popen(["gzip", "-9"], stdin=cpio.stdout, stdout=f)
        cpio.stdout.close()
        try:
            cpio.communicate(files.encode(), timeout=600)
            gz.wait(timeout=600)
        except subprocess.TimeoutExpired:
            cpio.kill()
            gz.kill()
            raise FslabError("building the initramfs took more than 10 minutes (cpio/gzip)") from None
        if gz.returncode != 0 or cpio.returncode != 0:
            raise FslabError("building the initramfs failed (cpio/gzip)")
    shutil.rmtree(scratch, ignore_errors=True)
