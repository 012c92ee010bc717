"""The guest image: a Debian kernel, a busybox initramfs and a Debian rootfs disk.

Built once and cached, content-addressed: the key hashes the kernel package
version, the guest's package list, fslab's pinned Python dependencies and the
boot scripts, so changing any of them builds a new image and never reuses a
stale one. Builds run in `<key>.tmp` and are renamed into place only when
complete, under a lock, so a killed build is never mistaken for a good one; a build
that could not make a part it was asked for (OpenZFS) fails and caches nothing.

Layout of one image directory:
    vmlinuz        the kernel (from linux-image-*-amd64, never installed on the host)
    initrd.img     busybox + the modules needed to mount the rootfs (virtio, ext4)
    rootfs.img     ext4 image: debootstrap minbase + filesystem tools + fio + python3,
                   fslab's Python deps in /opt/fslab/deps, the kernel's modules,
                   OpenZFS (modules built for this kernel + zpool/zfs; see openzfs.py)
    manifest.json  what went in (versions, sizes, build seconds)
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Callable

from fslab.errors import FslabError
from fslab.guest import initramfs, openzfs
from fslab.guest.paths import cache_root, debian_mirror
from fslab.system.locks import exclusive
from fslab.system.proc import run, which
from fslab.system.mounts import mounted_under

FORMAT = 3   # bump when the layout or build steps change in a way the key does not see

SUITE = "bookworm"
# Packages installed INSIDE the guest rootfs (not on the host).
GUEST_PACKAGES = sorted([
    "python3", "fio", "kmod", "util-linux", "mount", "procps", "psmisc", "findutils", "git",
    "e2fsprogs", "xfsprogs", "btrfs-progs", "f2fs-tools", "jfsutils", "reiserfsprogs",
    "nilfs-tools", "dmsetup",
])
# Debian packages the HOST needs to build and boot the guest.
HOST_PACKAGES = ["qemu-system-x86", "qemu-utils", "debootstrap", "busybox-static", "cpio",
                 "e2fsprogs", "gcc", "make"]   # gcc, make: the guest's OpenZFS module

GUEST_INIT = "/usr/local/sbin/fslab-guest-init"
DEPS_DIR = "/opt/fslab/deps"
# How long to wait for another process building the same image (a build takes 10-15 min on
# 2 cores; ./run-tests builds it at idle CPU and I/O priority beside the tests, which can
# take several times that): past it the waiting step fails
BUILD_WAIT_S = 7200



def python_deps() -> list[str]:
    """fslab's pinned runtime requirements (from pyproject.toml, else installed metadata)."""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if pyproject.exists():
        return sorted(tomllib.loads(pyproject.read_text())["project"]["dependencies"])
    from importlib.metadata import requires
    return sorted(r for r in (requires("fslab") or []) if "extra ==" not in r)


def kernel_package() -> tuple[str, str]:
    """(package name, version) of the newest linux-image-*-amd64 that apt knows: the one
    Debian's linux-image-amd64 depends on, at the version it pins (one apt-cache call)."""
    override = os.environ.get("FSLAB_GUEST_KERNEL_PACKAGE")
    if override:
        r = run(["apt-cache", "policy", override], check=False, timeout=60)
        m = re.search(r"Candidate:\s*(\S+)", r.stdout)
        if not m or m.group(1) == "(none)":
            raise FslabError(f"apt knows no version of {override} (run apt-get update)")
        return override, m.group(1)
    r = run(["apt-cache", "show", "--no-all-versions", "linux-image-amd64"], check=False, timeout=60)
    m = re.search(r"^Depends:.*?\b(linux-image-[0-9][^\s,]*-amd64) \(= ([^)\s]+)\)", r.stdout, re.M)
    if not m:
        raise FslabError("cannot find Debian's linux-image-amd64 in apt's lists "
                         "(run apt-get update)")
    return m.group(1), m.group(2)


def _boot_scripts_digest() -> str:
    """The boot scripts are part of the image: changing them must build a new one."""
    text = initramfs.INIT + GUEST_INIT_SCRIPT + " ".join(initramfs.ROOT_MODULES)
    return hashlib.sha256(text.encode()).hexdigest()


def image_key(kernel: tuple[str, str] | None = None) -> tuple[str, dict]:
    kernel = kernel or kernel_package()
    ingredients = {"format": FORMAT, "suite": SUITE, "kernel": list(kernel),
                   "packages": GUEST_PACKAGES, "python_deps": python_deps(),
                   "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
                   "scripts": _boot_scripts_digest(), "openzfs": openzfs.spec()}
    if not openzfs.wanted():
        ingredients["openzfs"] = None   # asked for an image without it: a key of its own
    digest = hashlib.sha256(json.dumps(ingredients, sort_keys=True).encode()).hexdigest()[:16]
    return digest, ingredients


class Image:
    """A built image directory."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.manifest = json.loads((self.path / "manifest.json").read_text())

    kernel = property(lambda self: self.path / "vmlinuz")
    initrd = property(lambda self: self.path / "initrd.img")
    rootfs = property(lambda self: self.path / "rootfs.img")

    @property
    def key(self) -> str:
        return self.path.name

    @property
    def kernel_release(self) -> str:
        return self.manifest["kernel_release"]

    def describe(self) -> dict:
        m = self.manifest
        return {"key": self.key, "kernel": m["kernel_release"], "kernel_package": m["kernel"],
                "suite": m["suite"], "packages": m["package_versions"], "path": str(self.path),
                "openzfs": m.get("openzfs"), "build_seconds": m.get("build_seconds")}


def cached_image() -> Image | None:
    """The image for the current ingredients if it is already built (no apt lookups if none)."""
    root = cache_root()
    if not root.exists():
        return None
    try:
        key, _ = image_key()
    except (FslabError, Exception):
        # apt lists missing: fall back to the newest complete image
        built = sorted((p for p in root.iterdir() if (p / "manifest.json").exists()),
                       key=lambda p: p.stat().st_mtime)
        return Image(built[-1]) if built else None
    p = root / key
    return Image(p) if (p / "manifest.json").exists() else None


def ensure_image(log: Callable[[str], None] = print) -> Image:
    """The cached image for the current ingredients, building it first if needed (~5-10 min,
    plus ~6 min the first time for the OpenZFS module, kept for later images)."""
    kernel = kernel_package()
    key, ingredients = image_key(kernel)
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / key
    # another fslab process may be building the same image (./run-tests prebuilds it in
    # the background at idle priority): wait for it, but not forever
    with exclusive(root / f"{key}.lock", BUILD_WAIT_S, "waiting for the guest image build"):
        if (final / "manifest.json").exists():
            return Image(final)
        if os.geteuid() != 0:
            raise FslabError("building the guest image needs root (debootstrap, chroot); "
                             "run fslab as root once, or point FSLAB_CACHE at a built image")
        missing = [t for t in ("qemu-system-x86_64", "debootstrap", "mkfs.ext4", "cpio")
                   if not which(t)] + ([] if initramfs.busybox_static() else ["busybox (static)"])
        if missing:
            raise FslabError(f"cannot build the guest image: missing {', '.join(missing)} "
                             f"(apt-get install {' '.join(HOST_PACKAGES)})")
        tmp = root / f"{key}.tmp"
        remove_build_dir(tmp)   # a killed build's leftovers
        tmp.mkdir()
        t0 = time.monotonic()
        log(f"building guest image {key} in {tmp} (once; a few minutes)")
        manifest = _build(tmp, kernel, ingredients, log)
        manifest["build_seconds"] = round(time.monotonic() - t0, 1)
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
        os.replace(tmp, final)
        log(f"guest image {key} built in {manifest['build_seconds']:.0f}s")
    _prune(root, keep=final)
    return Image(final)


def _prune(root: Path, keep: Path) -> None:
    """Remove superseded images (2 GB each). A guest still running one keeps its open files.
    Their lock files stay (empty): one unlinked while another process holds it would let
    a third lock a new file of the same name, and two builds of one image run at once."""
    for p in root.iterdir():
        if p != keep and p.is_dir() and (p / "manifest.json").exists():
            shutil.rmtree(p, ignore_errors=True)


def _build(out: Path, kernel: tuple[str, str], ingredients: dict,
           log: Callable[[str], None]) -> dict:
    work = out / "work"
    work.mkdir()
    try:
        release = _fetch_kernel(work, kernel, log)
        rootfs = work / "rootfs"
        _debootstrap(rootfs, log)
        log("installing the kernel's modules and fslab's Python deps into the rootfs")
        shutil.copytree(work / "kernel" / "lib" / "modules" / release,
                        rootfs / "lib" / "modules" / release, symlinks=True)
        zfs = openzfs_part(rootfs, release, kernel[1], bool(ingredients["openzfs"]), log)
        run(["chroot", str(rootfs), "depmod", "-a", release], timeout=600)
        shutil.copy2(work / "kernel" / "boot" / f"vmlinuz-{release}", out / "vmlinuz")
        _install_python_deps(rootfs, ingredients["python_deps"], log)
        _configure(rootfs)
        versions = _package_versions(rootfs)
        log("writing initramfs and rootfs image")
        initramfs.build(out / "initrd.img", rootfs / "lib" / "modules" / release, work / "initrd")
        _make_ext4(rootfs, out / "rootfs.img")
    finally:
        remove_build_dir(work)
    return {"kernel": f"{kernel[0]}={kernel[1]}", "kernel_release": release, "suite": SUITE,
            "package_versions": versions, "python_deps": ingredients["python_deps"],
            "ingredients": ingredients, "openzfs": zfs,
            "rootfs_bytes": (out / "rootfs.img").stat().st_size}


def openzfs_part(rootfs: Path, release: str, kernel_version: str, asked: bool,
                 log: Callable[[str], None]) -> dict:
    """OpenZFS into the rootfs, or a FslabError: an image without a part it was asked to
    build is never cached, so the next guest run tries again (the kernel, debootstrap's
    .debs and any module already built are kept)."""
    if not asked:
        return openzfs.left_out(rootfs)
    zfs = openzfs.install(rootfs, release, kernel_version, log)
    if not zfs["ok"]:
        raise FslabError(f"guest image not built: OpenZFS: {zfs['why']} "
                         f"({openzfs.WITHOUT_ENV}=1 builds one without it)")
    return zfs


def remove_build_dir(path: Path) -> None:
    """rm -rf, but first unmount what a killed debootstrap left mounted in its chroot
    (/proc, /sys...): rmtree must never descend into a live kernel filesystem."""
    inside = mounted_under(str(path))
    for m in inside:
        run(["umount", "-l", m], check=False)
    if inside:
        time.sleep(0.5)
    shutil.rmtree(path, ignore_errors=True)


def _fetch_kernel(work: Path, kernel: tuple[str, str], log: Callable[[str], None]) -> str:
    name, version = kernel
    log(f"fetching {name}={version} (apt-get download; not installed on the host)")
    dl = work / "deb"
    dl.mkdir()
    os.chmod(dl, 0o777)   # apt's sandbox user must be able to write here
    run(["apt-get", "download", "-q", f"{name}={version}"], cwd=str(dl), timeout=1800)
    deb = next(dl.glob("*.deb"))
    run(["dpkg-deb", "-x", str(deb), str(work / "kernel")], timeout=600)
    deb.unlink()
    releases = [p.name for p in (work / "kernel" / "lib" / "modules").iterdir()]
    if len(releases) != 1:
        raise FslabError(f"{name}: expected one kernel release, found {releases}")
    return releases[0]



def _debootstrap(rootfs: Path, log: Callable[[str], None]) -> None:
    mirror = debian_mirror()
    log(f"debootstrap --variant=minbase {SUITE} from {mirror} (+{len(GUEST_PACKAGES)} packages)")
    debs = cache_root() / "debs"   # downloaded .debs survive for the next build
    debs.mkdir(parents=True, exist_ok=True)
    r = run(["debootstrap", "--variant=minbase", f"--include={','.join(GUEST_PACKAGES)}",
             f"--cache-dir={debs}", SUITE, str(rootfs), mirror], check=False, timeout=3600)
    if not r.ok:
        logf = rootfs / "debootstrap" / "debootstrap.log"
        tail = logf.read_text()[-2000:] if logf.exists() else (r.stderr or r.stdout)[-2000:]
        raise FslabError(f"debootstrap failed (exit {r.returncode}):\n{tail}")
    # apt's caches are dead weight in the image
    shutil.rmtree(rootfs / "var" / "cache" / "apt" / "archives", ignore_errors=True)
    (rootfs / "var" / "cache" / "apt" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    for lists in (rootfs / "var" / "lib" / "apt" / "lists").glob("*_Packages"):
        lists.unlink()


def _install_python_deps(rootfs: Path, deps: list[str], log: Callable[[str], None]) -> None:
    """fslab's deps for the guest's python3 (Debian's 3.11, same ABI as ours when we are 3.11)."""
    target = rootfs / DEPS_DIR.lstrip("/")
    target.mkdir(parents=True)
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile",
            "--disable-pip-version-check", "--target", str(target), "--only-binary=:all:"]
    if sys.version_info[:2] != (3, 11):
        # the guest runs Debian bookworm's python3.11: fetch wheels for it, not for us
        argv += ["--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
                 "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                 "--platform", "manylinux2014_x86_64"]
    log(f"pip install --target {DEPS_DIR} ({len(deps)} pinned deps)")
    run(argv + deps, timeout=3600)
    # byte-compile with the guest's own python3, on every core: under TCG, compiling at
    # each import would cost ~30 s per boot
    run(["chroot", str(rootfs), "python3", "-m", "compileall", "-q", "-j", "0", DEPS_DIR],
        check=False, timeout=1800)


def _configure(rootfs: Path) -> None:
    (rootfs / "etc" / "hostname").write_text("fslab-guest\n")
    (rootfs / "etc" / "fstab").write_text("# fslab guest: mounts are made by fslab-guest-init\n")
    init = rootfs / GUEST_INIT.lstrip("/")
    init.parent.mkdir(parents=True, exist_ok=True)
    init.write_text(GUEST_INIT_SCRIPT)
    init.chmod(0o755)
    # the job share and the data disk are mounted here
    for d in ("job", "data"):
        (rootfs / d).mkdir(exist_ok=True)


def _package_versions(rootfs: Path) -> dict[str, str]:
    r = run(["chroot", str(rootfs), "dpkg-query", "-W", "-f", "${Package}=${Version}\\n",
             *GUEST_PACKAGES], check=False, timeout=120)
    return dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)


def _make_ext4(rootfs: Path, image: Path) -> None:
    used = int(subprocess.run(["du", "-sb", str(rootfs)], capture_output=True, text=True,
                              check=True, timeout=600).stdout.split()[0])
    size = int(used * 1.3) + (256 << 20)
    with open(image, "wb") as f:
        f.truncate(size)
    # -d copies the tree without mounting anything on the host
    run(["mkfs.ext4", "-q", "-F", "-L", "fslab-root", "-E", "lazy_itable_init=0",
         "-d", str(rootfs), str(image)], timeout=1800)


# Stage 2 of the boot (stage 1 is the initramfs): runs as PID 1 in the rootfs.
# Kept tiny on purpose; everything else is fslab.guest.agent, shared in with the job.
GUEST_INIT_SCRIPT = r"""#!/bin/sh
# fslab guest init: mount the basics, attach the job share, hand over to the agent.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc 2>/dev/null
mount -t sysfs sysfs /sys 2>/dev/null
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts && mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
ln -sf /proc/self/mounts /etc/mtab 2>/dev/null
hostname fslab-guest
modprobe -a 9pnet_virtio 9p loop
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576 fslabjob /job; then
  export PYTHONPATH=/job/src:/opt/fslab/deps PYTHONDONTWRITEBYTECODE=1
  python3 -m fslab.guest.agent /job
  echo "fslab-guest: agent exited with $?"
else
  echo "fslab-guest: no job share (mount_tag fslabjob); nothing to do"
fi
# nothing to sync: / is a throwaway snapshot, /data is scratch, /job (9p) writes through
echo o > /proc/sysrq-trigger
sleep 10
"""
