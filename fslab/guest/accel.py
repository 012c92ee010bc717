"""KVM or TCG? A short boot probe decides, and the answer is cached per host boot.

/dev/kvm existing proves little: on some hosts (nested virtualisation, this CI's)
a KVM guest hangs in early boot. So we boot the real kernel + initramfs under
KVM with `fslab.probe` on the command line, which prints a marker from user
space and powers off, and give it a few seconds. No marker in time: qemu is
killed and TCG (software emulation) is used. The verdict holds until the host
reboots (keyed by /proc/sys/kernel/random/boot_id) and is recorded with every
guest run, since it decides whether absolute numbers mean anything.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from fslab.guest.image import Image
from fslab.guest.paths import cache_root
from fslab.guest.initramfs import PROBE_MARKER
from fslab.guest.qemu import Guest

PROBE_TIMEOUT_S = float(os.environ.get("FSLAB_KVM_PROBE_TIMEOUT", "20"))


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def _cache_file() -> Path:
    return cache_root() / "accel.json"


def cached_verdict() -> dict | None:
    """The probe's verdict for this host boot, if it ran already."""
    try:
        v = json.loads(_cache_file().read_text())
    except (OSError, ValueError):
        return None
    return v if v.get("boot_id") == _boot_id() else None


def kvm_usable() -> str | None:
    """None if /dev/kvm can be opened, else why not."""
    if not Path("/dev/kvm").exists():
        return "no /dev/kvm"
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError as e:
        return f"cannot open /dev/kvm: {e.strerror}"
    os.close(fd)
    return None


def probe_kvm(image: Image, timeout: float = PROBE_TIMEOUT_S, cpu: str | None = None) -> dict:
    """Boot to the initramfs under KVM; {'ok': bool, 'seconds': float, 'why': str}.

    `cpu` overrides qemu's -cpu (tests use a model that hangs under this host's KVM).
    """
    why = kvm_usable()
    if why:
        return {"ok": False, "seconds": 0.0, "why": why}
    seen = []
    guest = Guest(image.kernel, image.initrd, "kvm", append="fslab.probe", memory_mib=256,
                  cpus=1, cpu=cpu, on_line=lambda line: seen.append(PROBE_MARKER in line))
    t0 = time.monotonic()
    try:
        guest.start()
        while time.monotonic() - t0 < timeout:
            if any(seen):
                break
            if guest.wait(timeout=0.2) is not None:
                break
        ok = any(seen)
        secs = round(time.monotonic() - t0, 2)
        if ok:
            return {"ok": True, "seconds": secs, "why": ""}
        tail = " | ".join(l for l in guest.lines[-3:] if l.strip())
        return {"ok": False, "seconds": secs,
                "why": (f"KVM guest did not reach user space within {timeout:.0f}s"
                        if guest.running else f"qemu exited early: {tail or 'no output'}")}
    finally:
        guest.stop()


def choose(image: Image, force: str | None = None) -> dict:
    """{'accel': 'kvm'|'tcg', 'kvm_probe': {...}, 'boot_id': ...}; probes once per host boot.

    FSLAB_GUEST_ACCEL=kvm|tcg (or `force`) skips the probe.
    """
    force = force or os.environ.get("FSLAB_GUEST_ACCEL")
    if force in ("kvm", "tcg"):
        return {"accel": force, "forced": True, "boot_id": _boot_id()}
    cached = cached_verdict()
    if cached:
        return cached
    probe = probe_kvm(image)
    verdict = {"accel": "kvm" if probe["ok"] else "tcg", "kvm_probe": probe,
               "boot_id": _boot_id(), "probed_at": time.time()}
    try:
        _cache_file().parent.mkdir(parents=True, exist_ok=True)
        tmp = _cache_file().with_suffix(".tmp")
        tmp.write_text(json.dumps(verdict, indent=2))
        os.replace(tmp, _cache_file())
    except OSError:
        pass   # an unwritable cache only costs a probe next time
    return verdict
