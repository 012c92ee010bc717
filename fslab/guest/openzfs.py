"""OpenZFS in the guest: the kernel module built on the host for the guest's kernel,
and Debian's zpool/zfs tools installed in the guest rootfs.

Debian ships OpenZFS as DKMS source in its `contrib` component (2.3.x in
bookworm-backports). The host's own apt sources may list only `main`, so a
private apt configuration under `<cache>/openzfs/apt` (same archive host as the
host's sources; the host's /etc/apt is never touched) reaches contrib and
backports. The module is compiled at native speed on the host against the guest
kernel's headers (unpacked, never installed), once per (OpenZFS version, kernel
release): the stripped .ko files are kept in `<cache>/openzfs/modules/<key>/`.
Each finished step is kept, so a killed build resumes: downloaded .debs, the
unpacked and configured source tree (`build-<key>/`, removed once the modules are
cached), then the modules.

`install(rootfs, release, log)` never raises: on any failure it returns
{"ok": False, "why": one line}; the image build then fails with that line and caches
nothing (fslab/guest/image.py). Only an image asked for without OpenZFS
(FSLAB_GUEST_WITHOUT_ZFS=1, a key of its own) lacks it, and its zfs driver says why.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Callable

from fslab.errors import FslabError
from fslab.system.proc import run, which
from fslab.guest.paths import cache_root, debian_mirror

SUITE = "bookworm-backports"          # OpenZFS 2.3.x (bookworm itself has 2.1.11)
COMPONENTS = "main contrib"
SOURCE_PACKAGE = "zfs-dkms"           # module source, /usr/src/zfs-<version>
USERLAND_PACKAGE = "zfsutils-linux"   # zpool, zfs (+ libzfs, libnvpair, ... from the same suite)
MODULES = ("spl.ko", "zfs.ko")
# In the guest rootfs: why ZFS is missing, read by fslab.filesystems.zfs
UNAVAILABLE_NOTE = "/etc/fslab/zfs-unavailable"
BUILD_TOOLS = ("gcc", "make", "dpkg-deb", "strip")
WITHOUT_ENV = "FSLAB_GUEST_WITHOUT_ZFS"


def wanted() -> bool:
    """Whether the guest image is to carry OpenZFS (always, unless the user said not)."""
    return os.environ.get(WITHOUT_ENV, "") in ("", "0")


def left_out(rootfs: Path) -> dict:
    """The manifest entry and the rootfs note of an image asked for without OpenZFS."""
    why = f"the image was built with {WITHOUT_ENV}=1"
    note = rootfs / UNAVAILABLE_NOTE.lstrip("/")
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(f"OpenZFS not in this guest image: {why}\n")
    return {"ok": False, "why": why, "seconds": 0.0}


def spec() -> dict:
    """What the image key hashes: changing where OpenZFS comes from builds a new image."""
    return {"suite": SUITE, "components": COMPONENTS, "source": SOURCE_PACKAGE,
            "userland": USERLAND_PACKAGE, "modules": list(MODULES)}


def cache_dir() -> Path:
    return cache_root() / "openzfs"


def upstream_version(debian_version: str) -> str:
    """'2.3.2-2~bpo12+2' -> '2.3.2' (the /usr/src/zfs-<x> directory and the module's version)."""
    return debian_version.split(":")[-1].split("-")[0]


def label(version: str) -> str:
    return f"OpenZFS {version} kernel module"


class Apt:
    """apt-get/apt-cache with a private sources list, lists and archive cache."""

    def __init__(self, root: Path, mirror: str):
        self.root = root
        self.archives = root / "archives"
        (self.archives / "partial").mkdir(parents=True, exist_ok=True)
        (root / "lists" / "partial").mkdir(parents=True, exist_ok=True)
        os.chmod(self.archives, 0o755)
        sources = root / "sources.list"
        keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
        opts = f"[signed-by={keyring}] " if Path(keyring).exists() else ""
        sources.write_text(f"deb {opts}{mirror} bookworm {COMPONENTS}\n"
                           f"deb {opts}{mirror} {SUITE} {COMPONENTS}\n")
        self.options = [
            "-o", f"Dir::Etc::sourcelist={sources}", "-o", "Dir::Etc::sourceparts=-",
            "-o", f"Dir::State::Lists={root / 'lists'}",
            "-o", f"Dir::Cache={root / 'cache'}", "-o", f"Dir::Cache::archives={self.archives}",
            "-o", "APT::Sandbox::User=root", "-o", "Debug::NoLocking=1"]
        (root / "cache").mkdir(exist_ok=True)

    def update(self) -> None:
        lists = self.root / "lists"
        fresh = [p for p in lists.glob("*_Packages*")
                 if time.time() - p.stat().st_mtime < 24 * 3600]
        if fresh:   # updated today: keep the versions stable across a resumed build
            return
        r = run(["apt-get", *self.options, "update", "-q", "--error-on=any"], check=False,
                timeout=600)
        if not r.ok:
            errors = [ln for ln in (r.stderr or "").splitlines() if ln.startswith(("E:", "W:"))]
            raise FslabError(f"apt-get update for {SUITE}/contrib failed: "
                             f"{errors[0] if errors else _last_line(r.stderr or r.stdout)}")

    def version(self, package: str, suite: str = SUITE) -> str:
        r = run(["apt-cache", *self.options, "show", f"{package}/{suite}"], check=False,
                timeout=120)
        m = re.search(r"^Version:\s*(\S+)", r.stdout, re.M)
        if not m:
            raise FslabError(f"{package} not found in {suite} (contrib) at the Debian mirror")
        return m.group(1)

    def install_set(self, package: str, status_file: Path) -> list[tuple[str, str]]:
        """(name, version) of what installing `package`/SUITE adds to a system whose dpkg
        status is `status_file` (the guest rootfs), without recommends."""
        r = run(["apt-get", *self.options, "-o", f"Dir::State::status={status_file}", "-s",
                 "--no-install-recommends", "install", f"{package}/{SUITE}"],
                check=False, timeout=300)
        if not r.ok:
            raise FslabError(f"apt cannot install {package}/{SUITE} in the guest: "
                             f"{_last_line(r.stderr or r.stdout)}")
        return re.findall(r"^Inst (\S+) \((\S+) ", r.stdout, re.M)

    def fetch(self, packages: list[tuple[str, str]], use_host_apt: bool = False) -> list[Path]:
        """The .deb files of (name, version), downloaded once into the archive cache."""
        out = []
        for name, version in packages:
            pattern = f"{name}_{version.replace(':', '%3a')}_*.deb"
            have = sorted(self.archives.glob(pattern))
            if not have:
                opts = ["-o", "APT::Sandbox::User=root"] if use_host_apt else self.options
                argv = ["apt-get", *opts, "download", "-q",
                        f"{name}={version}"]
                r = run(argv, cwd=str(self.archives), check=False, timeout=1800)
                have = sorted(self.archives.glob(pattern))
                if not r.ok or not have:
                    raise FslabError(f"cannot download {name}={version}: "
                                     f"{_last_line(r.stderr or r.stdout)}")
            out.append(have[0])
        return out


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def _apt() -> Apt:
    return Apt(cache_dir() / "apt", debian_mirror())


def cached_modules(version: str, release: str) -> Path | None:
    d = cache_dir() / "modules" / f"{version}_{release}"
    return d if all((d / m).exists() for m in MODULES) and (d / "build.json").exists() else None


def build_modules(release: str, kernel_version: str, log: Callable[[str], None],
                  apt: Apt | None = None) -> tuple[str, Path]:
    """(OpenZFS version, dir with spl.ko + zfs.ko) for kernel `release`, built if not cached.

    `kernel_version` is the Debian version of the guest's linux-image package: its
    headers have the same version and come from the host's apt lists, as the kernel did.
    """
    missing = [t for t in BUILD_TOOLS if not which(t)]
    if missing:
        raise FslabError(f"cannot build the OpenZFS module: missing {', '.join(missing)} "
                         "(apt-get install gcc make binutils)")
    apt = apt or _apt()
    apt.update()
    deb_version = apt.version(SOURCE_PACKAGE)
    version = upstream_version(deb_version)
    done = cached_modules(version, release)
    if done:
        return version, done
    key = f"{version}_{release}"
    build = cache_dir() / f"build-{key}"
    tree = build / "root"
    src = tree / "usr" / "src" / f"zfs-{version}"
    t0 = time.monotonic()
    if not (build / "unpacked").exists():
        log(f"OpenZFS {version}: fetching {SOURCE_PACKAGE} and linux-headers-{release}")
        shutil.rmtree(build, ignore_errors=True)
        tree.mkdir(parents=True)
        headers = [(f"linux-headers-{release}", kernel_version)]
        headers += header_deps(release, kernel_version)
        debs = apt.fetch([(SOURCE_PACKAGE, deb_version)]) + apt.fetch(headers, use_host_apt=True)
        for deb in debs:
            run(["dpkg-deb", "-x", str(deb), str(tree)], timeout=600)
        _fix_headers_makefile(tree, release)
        if not (src / "configure").exists():
            raise FslabError(f"{SOURCE_PACKAGE} {deb_version} has no {src.relative_to(tree)}")
        (build / "unpacked").touch()
    common, obj = _headers_dirs(tree, release)
    jobs = str(os.cpu_count() or 1)
    if not (build / "configured").exists():
        log(f"OpenZFS {version}: configure for {release} (~2 min)")
        r = run(["./configure", "--with-config=kernel", f"--with-linux={common}",
                 f"--with-linux-obj={obj}"], cwd=str(src), check=False, timeout=1800)
        if not r.ok:
            (build / "configure.log").write_text(r.stdout + r.stderr)
            raise FslabError(f"OpenZFS {version} configure for {release} failed: "
                             f"{_last_line(r.stderr or r.stdout)} (log: {build}/configure.log)")
        (build / "configured").touch()
    log(f"OpenZFS {version}: make -j{jobs} -C module (~3-6 min)")
    r = run(["make", f"-j{jobs}", "-C", "module"], cwd=str(src), check=False, timeout=5400)
    if not r.ok:
        (build / "make.log").write_text(r.stdout + r.stderr)
        raise FslabError(f"OpenZFS {version} module build for {release} failed: "
                         f"{_last_line(r.stderr or r.stdout)} (log: {build}/make.log)")
    final = cache_dir() / "modules" / key
    tmp = final.with_name(key + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for m in MODULES:
        ko = src / "module" / m
        shutil.copy2(ko, tmp / m)
        run(["strip", "--strip-debug", str(tmp / m)], timeout=300)   # zfs.ko: 94 MB -> 9 MB
    (tmp / "build.json").write_text(json.dumps({
        "version": version, "package": f"{SOURCE_PACKAGE}={deb_version}", "kernel": release,
        "seconds": round(time.monotonic() - t0, 1)}, indent=2))
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    shutil.rmtree(build, ignore_errors=True)   # ~0.5 GB of sources and objects
    log(f"OpenZFS {version}: modules for {release} built in {time.monotonic() - t0:.0f}s")
    return version, final


# "linux-kbuild-6.1 (>= 6.1.192-2)" in a Depends field
_DEPENDS_ITEM = re.compile(r"^\s*(\S+)(?:\s*\((<<|<=|=|>=|>>)\s*([^)\s]+)\))?\s*$")


def parse_depends(field: str) -> list[tuple[str, str, str]]:
    """(name, relation, version) of each item of a Depends field ('' where unversioned);
    of an alternative ('a | b') the first."""
    out = []
    for item in field.split(","):
        m = _DEPENDS_ITEM.match(item.split("|")[0])
        if m:
            out.append((m.group(1), m.group(2) or "", m.group(3) or ""))
    return out


def satisfies(version: str, relation: str, wanted: str) -> bool:
    """Debian's version relation, as dpkg itself compares (epochs, tildes, revisions)."""
    if not relation:
        return True
    op = {"<<": "lt", "<=": "le", "=": "eq", ">=": "ge", ">>": "gt"}[relation]
    return run(["dpkg", "--compare-versions", version, op, wanted], check=False,
               timeout=30).ok


def header_deps(release: str, kernel_version: str) -> list[tuple[str, str]]:
    """(name, version) of the -common headers and linux-kbuild that linux-headers-<release>
    at `kernel_version` depends on, each at the newest version the host's apt serves that
    meets the headers' own relation. The archive moves kbuild on without the headers
    (6.1.192-2's headers want kbuild >= 6.1.192-2; only 6.1.192-3 is served): an equal
    version string is not what the headers ask for."""
    r = run(["apt-cache", "show", f"linux-headers-{release}={kernel_version}"], check=False,
            timeout=120)
    m = re.search(r"^Depends:\s*(.*)$", r.stdout, re.M)
    if not r.ok or not m:
        raise FslabError(f"apt knows no linux-headers-{release}={kernel_version} "
                         "(run apt-get update)")
    wanted = [d for d in parse_depends(m.group(1))
              if re.fullmatch(r"linux-(headers-\S+-common|kbuild-\S+)", d[0])]
    if len(wanted) < 2:
        raise FslabError(f"linux-headers-{release}={kernel_version} names no -common headers "
                         f"and kbuild package: Depends: {m.group(1)}")
    out = []
    for name, relation, version in wanted:
        served = run(["apt-cache", "madison", name], check=False, timeout=120).stdout
        versions = [ln.split("|")[1].strip() for ln in served.splitlines() if ln.count("|") >= 2]
        fits = [v for v in versions if satisfies(v, relation, version)]
        if not fits:
            raise FslabError(f"the archive serves no {name} {relation} {version} that "
                             f"linux-headers-{release} needs (it serves "
                             f"{', '.join(versions) or 'none'})")
        newest = fits[0]
        for v in fits[1:]:
            if satisfies(v, ">>", newest):
                newest = v
        out.append((name, newest))
    return out


def _headers_dirs(tree: Path, release: str) -> tuple[Path, Path]:
    obj = tree / "usr" / "src" / f"linux-headers-{release}"
    commons = sorted((tree / "usr" / "src").glob("linux-headers-*-common"))
    if not obj.is_dir() or len(commons) != 1:
        raise FslabError(f"unpacked headers for {release} are incomplete")
    return commons[0], obj


def _fix_headers_makefile(tree: Path, release: str) -> None:
    """The -amd64 headers' Makefile includes the -common tree by absolute path (/usr/src/...):
    point it at the unpacked copy."""
    common, obj = _headers_dirs(tree, release)
    mk = obj / "Makefile"
    text = re.sub(r"/usr/src/linux-headers-\S+-common", str(common), mk.read_text())
    mk.write_text(text)


def install(rootfs: Path, release: str, kernel_version: str,
            log: Callable[[str], None]) -> dict:
    """Put the OpenZFS modules (extra/) and userland into `rootfs`; run depmod afterwards.

    Returns the manifest entry: {"ok": True, "version", "label", ...} or {"ok": False,
    "why": one line}, and on failure leaves the reason in the rootfs for the zfs driver.
    """
    t0 = time.monotonic()
    try:
        apt = _apt()
        version, modules = build_modules(release, kernel_version, log, apt)
        extra = rootfs / "lib" / "modules" / release / "extra"
        extra.mkdir(parents=True, exist_ok=True)
        for m in MODULES:
            shutil.copy2(modules / m, extra / m)
        packages = apt.install_set(USERLAND_PACKAGE, rootfs / "var" / "lib" / "dpkg" / "status")
        debs = apt.fetch(packages)
        inside = rootfs / "tmp" / "openzfs-debs"
        inside.mkdir(parents=True, exist_ok=True)
        for deb in debs:
            shutil.copy2(deb, inside / deb.name)
        log(f"OpenZFS {version}: installing {', '.join(n for n, _ in packages)} in the rootfs")
        r = run(["chroot", str(rootfs), "dpkg", "-i", "--force-confdef",
                 *[f"/tmp/openzfs-debs/{d.name}" for d in debs]],
                check=False, timeout=1200, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        shutil.rmtree(inside, ignore_errors=True)
        if not r.ok:
            raise FslabError(f"dpkg -i {USERLAND_PACKAGE} in the guest rootfs failed: "
                             f"{_last_line(r.stderr or r.stdout)}")
        build = json.loads((modules / "build.json").read_text())
        return {"ok": True, "version": version, "label": label(version),
                "module_package": build["package"], "module_build_seconds": build["seconds"],
                "userland": dict(packages), "kernel": release,
                "seconds": round(time.monotonic() - t0, 1)}
    except Exception as e:   # any failure: an image without ZFS, and one line saying why
        why = " ".join(str(e).split()) or type(e).__name__
        note = rootfs / UNAVAILABLE_NOTE.lstrip("/")
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(f"OpenZFS not in this guest image: {why}\n")
        log(f"OpenZFS: not installed in the guest image: {why}")
        return {"ok": False, "why": why, "seconds": round(time.monotonic() - t0, 1)}


def describe(manifest: dict | None) -> str:
    """One line for `fslab doctor`: built / not built (why) / not yet built."""
    if manifest and "openzfs" in manifest:
        z = manifest["openzfs"]
        if z.get("ok"):
            return f"{z['label']} for {z['kernel']}: built ({z.get('module_package', '')})"
        return f"OpenZFS kernel module: not built: {z.get('why')}"
    built = sorted((cache_dir() / "modules").glob("*_*/build.json")) \
        if (cache_dir() / "modules").exists() else []
    if built:
        b = json.loads(built[-1].read_text())
        return (f"{label(b['version'])} for {b['kernel']}: modules built, not yet in a guest "
                "image (the next guest run builds it)")
    return "OpenZFS kernel module: not built yet (the first guest run builds it, ~6 min)"
