"""The qemu guest target: filesystems the host kernel lacks (f2fs, jfs, reiserfs, nilfs2)
and tests that need device-mapper (crash consistency), run by fslab itself inside a
Debian guest. See docs/guest.md.

The executor that runs a whole plan in one guest and merges its results is
fslab/run/guest.py (GuestExecutor); this package is the machine it uses.

Entry points:
    ensure_image(log)                            build (once) or reuse the cached image
    describe()                                   facts for `fslab doctor`
    capable()                                    None if guests can run here, else why not
    HOST_PACKAGES                                Debian packages the host needs for guests
"""
from __future__ import annotations

from fslab.guest.image import GUEST_PACKAGES, HOST_PACKAGES, cached_image, ensure_image  # noqa: F401
from fslab.guest.initramfs import busybox_static
from fslab.system.proc import which, first_line
from fslab.guest import accel, openzfs
from fslab.guest.paths import cache_root


def capable() -> str | None:
    """None if this host can build and boot the guest, else what is missing."""
    import os
    missing = [t for t in ("qemu-system-x86_64", "debootstrap", "cpio") if not which(t)]
    if not busybox_static():
        missing.append("static busybox")
    if missing:
        return f"missing {', '.join(missing)} (apt-get install {' '.join(HOST_PACKAGES)})"
    if os.geteuid() != 0:
        return "building the guest image needs root (debootstrap)"
    return None


def describe() -> dict:
    """What `fslab doctor` shows about guests: tools, cached image, acceleration verdict."""
    img = None
    try:
        img = cached_image()
    except Exception:
        pass
    return {"capable": capable() is None, "why_not": capable() or "",
            "qemu": first_line(["qemu-system-x86_64", "--version"]),
            "cache": str(cache_root()),
            "image": img.describe() if img else None,
            "openzfs": openzfs.describe(img.manifest if img else None),
            "accel": accel.cached_verdict(),
            "kvm_device": accel.kvm_usable() or "usable"}
