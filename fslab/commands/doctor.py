"""`fslab doctor`: what can run here, and why not; `--install` fetches Debian's packages."""
from __future__ import annotations

import os
from pathlib import Path

import orjson
import typer
from rich.table import Table

from fslab import filesystems
from fslab.commands._common import JsonOpt, console
from fslab.system.proc import first_line, is_root, run, which
from fslab.errors import FslabError

# fslab modules are imported inside the commands: cli imports every command module at
# start-up, so what a command runs loads only when it runs (`fslab --help` stays fast)

# Debian packages for everything fslab drives on the host.
HOST_PACKAGES = ["fio", "e2fsprogs", "xfsprogs", "btrfs-progs", "zfs-fuse", "util-linux",
                 "psmisc", "git", "strace"]
# zpool and zfs-fuse have no version flag: Debian's package version says it
TOOLS = {"fio": ["fio", "--version"], "mke2fs": ["mke2fs", "-V"], "mkfs.xfs": ["mkfs.xfs", "-V"],
         "mkfs.btrfs": ["mkfs.btrfs", "--version"],
         "zpool": ["dpkg-query", "-W", "-f", "${Package} ${Version}", "zfs-fuse", "zfsutils-linux"],
         "zfs-fuse": ["dpkg-query", "-W", "-f", "${Package} ${Version}", "zfs-fuse"],
         "losetup": ["losetup", "--version"],
         "qemu-system-x86_64": ["qemu-system-x86_64", "--version"], "git": ["git", "--version"],
         "strace": ["strace", "-V"]}


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)


def facts() -> dict:
    tools = {}
    for name, argv in TOOLS.items():
        tools[name] = (first_line(argv) or "present") if which(name) else None
    fss = {}
    for name in filesystems.names():
        a = filesystems.get(name).available()
        fss[name] = {"available": a.ok, "how": a.how, "why": a.why, "packages": a.packages}
    out = {"root": is_root(), "kernel": os.uname().release, "tools": tools, "filesystems": fss,
           "applications": _applications(),
           "loop": Path("/dev/loop-control").exists(), "fuse": Path("/dev/fuse").exists(),
           "kvm": Path("/dev/kvm").exists()}
    try:
        from fslab.guest import describe
        out["guest"] = describe()
    except ImportError:
        pass
    return out


def doctor(install: bool = typer.Option(False, "--install", help="apt-get install the Debian "
                                        "packages fslab needs (fio, mkfs tools, zfs-fuse, the "
                                        "applications: postgresql-15, sqlite3, dbench, "
                                        "rocksdb-tools, ...)."),
           json: bool = JsonOpt) -> None:
    """List each filesystem: available or not, how, and why not."""
    if install:
        _install()
    f = facts()
    if json:
        from fslab import schema
        print(orjson.dumps(schema.stamp("doctor", f), option=orjson.OPT_INDENT_2).decode())
        return
    console.print(f"kernel {f['kernel']}; {'root' if f['root'] else 'not root (only --mountpoint runs)'}"
                  f"; loop devices {'yes' if f['loop'] else 'no'}; fuse {'yes' if f['fuse'] else 'no'}")
    t = Table(title="filesystems", title_justify="left")
    for c in ("filesystem", "available", "how / why not"):
        t.add_column(c)
    for name, a in f["filesystems"].items():
        t.add_row(name, "[green]yes[/]" if a["available"] else "[red]no[/]",
                  a["how"] if a["available"] else (a["why"] + (f" ({a['how']})" if a["how"] else "")))
    console.print(t)
    t = Table(title="tools", title_justify="left")
    t.add_column("tool")
    t.add_column("version")
    for name, v in f["tools"].items():
        t.add_row(name, v or "[red]missing[/]")
    console.print(t)
    for name, a in f["applications"].items():   # the application suites' programs
        console.print(f"application {name}: {a['version']} (Debian {a['package']})" if a["version"]
                      else f"[red]{a['missing']}[/]")
    if "guest" in f:
        g = f["guest"]
        if g.get("capable"):
            accel = g.get("accel") or "not probed yet (KVM if it boots, else TCG)"
            if isinstance(accel, dict):   # the cached probe verdict
                accel = accel.get("accel", "?") + ("" if accel.get("accel") == "kvm"
                                                   else " (KVM did not boot here)")
            image = g.get("image") or f"built on first use, cached in {g.get('cache')}"
            if isinstance(image, dict):   # the cached image's manifest
                image = f"{image.get('kernel')} + {len(image.get('packages', {}))} packages, {image.get('path')}"
            console.print(f"guest target: available ({g.get('qemu')}); accel: {accel}; image: {image}")
            if g.get("openzfs"):
                console.print(f"guest ZFS: {g['openzfs']}")
        else:
            console.print(f"guest target: unavailable: {g.get('why_not')}")
    if not f["root"]:
        console.print("run as root to provision filesystems (or use fslab run --mountpoint DIR)")


def _applications() -> dict:
    """Each application an app suite runs: its version, or one line naming its package."""
    from fslab.workloads.apps.programs import APPLICATIONS
    return {p.name: {"package": p.package, "version": p.version(), "missing": p.missing()}
            for p in APPLICATIONS}


def _install() -> None:
    if not is_root():
        raise FslabError("doctor --install needs root (it runs apt-get install)")
    from fslab.workloads.apps.programs import PACKAGES as app_pkgs
    pkgs = list(HOST_PACKAGES) + list(app_pkgs)
    try:
        from fslab.guest import HOST_PACKAGES as guest_pkgs
        pkgs += guest_pkgs
    except ImportError:
        pass
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    console.print(f"apt-get install {' '.join(pkgs)}")
    run(["apt-get", "update", "-q"], env=env, timeout=1800)
    run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *pkgs], env=env, timeout=3600)
