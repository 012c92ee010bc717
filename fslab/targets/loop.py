"""Loop-image target: a file in a work directory behind a loop device.

Direct I/O on the loop device (LO_FLAGS_DIRECT_IO) avoids double caching of the
image in the host page cache; we ask for it and record whether the kernel agreed.

Two ways to hold the image (`[run] image`, bench/noise measured both):
- "fresh": a new sparse file per unit, deleted after it. The host filesystem places its
  blocks anew each time, on first write, so each unit's filesystem sits on other blocks
  of the disk under it.
- "reused": one file per image size, written through once and kept for the run; every
  unit's filesystem is made on the same, already written host blocks. Discard is off on
  its loop device: a hole punched by mkfs or by the filesystem would free those blocks
  and send the next unit's writes elsewhere again.
"""
from __future__ import annotations

import os
from pathlib import Path

from fslab.system import state
from fslab.system.proc import run
from fslab.targets.base import Target
from fslab.system.teardown import detach_loop


class LoopTarget(Target):
    kind = "loop"

    def __init__(self, workdir: str | Path, direct_io: bool = True, image: str = "fresh"):
        self.workdir = Path(workdir)
        self.direct_io = direct_io
        self.image = image               # "fresh" or "reused" (the module's docstring)
        self.devices: list[tuple[str, str]] = []   # (loop device, image path)

    def acquire(self, size_bytes: int, label: str) -> str:
        self.workdir.mkdir(parents=True, exist_ok=True)
        reused = self.image == "reused"
        image = self.workdir / (reused_name(size_bytes, len(self.devices)) if reused
                                else self.image_name(label))
        if reused:
            write_through(image, size_bytes)
        else:
            self.create_image(image, size_bytes)
        dev = attach(image, self.direct_io)
        self.devices.append((dev, str(image)))
        if reused:
            no_discard(dev)
        return dev

    def release(self) -> None:
        for dev, image in reversed(self.devices):
            detach_loop(dev, image)
            state.forget("loop", dev)
            if self.image != "reused":   # kept for the run's next unit (remove_reused)
                self.discard_image(image)
        self.devices.clear()

    # the image file's life; fslab/workloads/support/keptfs.py keeps images across runs by overriding these
    def image_name(self, label: str) -> str:
        return f"{label}-{len(self.devices)}.img"

    def create_image(self, image: Path, size_bytes: int) -> None:
        state.note("file", str(image))
        with open(image, "wb") as f:
            f.truncate(size_bytes)       # sparse: costs no disk until written

    def discard_image(self, image: str) -> None:
        Path(image).unlink(missing_ok=True)
        state.forget("file", image)

    def describe(self) -> dict:
        info = {"kind": self.kind, "workdir": str(self.workdir), "image": self.image}
        if self.devices:
            dev, image = self.devices[0]
            dio = Path(f"/sys/block/{os.path.basename(dev)}/loop/dio")
            info["direct_io"] = dio.read_text().strip() == "1" if dio.exists() else None
            info["backing"] = backing_device_of(image)
            info["image_file"] = os.path.basename(image)
        return info

    def image_paths(self) -> list[str]:
        return [img for _, img in self.devices]


def reused_name(size_bytes: int, index: int) -> str:
    return f"reused-{size_bytes}-{index}.img"


def write_through(image: Path, size_bytes: int, chunk: int = 8 << 20) -> None:
    """The image, every block written once and on the disk (kept if it is already there):
    the host filesystem allocates all of it now, not during a unit's measurement."""
    if image.exists() and image.stat().st_size == size_bytes:
        return
    state.note("file", str(image))
    zeros = bytes(chunk)
    with open(image, "wb") as f:
        left = size_bytes
        while left > 0:
            left -= f.write(zeros[:min(chunk, left)])
        f.flush()
        os.fsync(f.fileno())


def remove_reused(workdir: Path) -> None:
    """The run's reused images, at its end."""
    for image in Path(workdir).glob("reused-*.img"):
        image.unlink(missing_ok=True)
        state.forget("file", str(image))


def no_discard(dev: str) -> None:
    """Discard off on a loop device: mkfs and the filesystem then cannot punch holes in
    its image (the kernel lets root set discard_max_bytes to 0; where it does not, the
    image is merely reallocated on its next write)."""
    knob = Path(f"/sys/block/{os.path.basename(dev)}/queue/discard_max_bytes")
    try:
        knob.write_text("0\n")
    except OSError:
        pass


def attach(image: str | Path, direct_io: bool = True) -> str:
    """A loop device over `image` (noted for cleanup), with direct I/O where the kernel agrees."""
    argv = ["losetup", "--find", "--show"]
    if direct_io:
        argv.append("--direct-io=on")
    argv.append(str(image))
    # noted before the attach: killed between losetup attaching and saying which device,
    # fslab would not know the device, but cleanup can still find it by its image
    state.note("loopimage", str(image))
    r = run(argv, check=False)
    if not r.ok and direct_io:   # some backing filesystems refuse O_DIRECT
        r = run(argv[:3] + [str(image)])
    elif not r.ok:
        run(argv)
    dev = r.stdout.strip()
    state.note("loop", dev, image=str(image))
    state.forget("loopimage", str(image))
    return dev


def backing_device_of(path: str) -> dict:
    """The block device holding a file, and its model/rotational flag where known."""
    r = run(["findmnt", "-n", "-o", "SOURCE,FSTYPE", "--target", path], check=False)
    src, _, fstype = r.stdout.strip().partition(" ")
    info = {"source": src, "fstype": fstype.strip()}
    name = os.path.basename(os.path.realpath(src)) if src.startswith("/dev/") else None
    if name:
        sysfs = Path("/sys/class/block") / name
        if (sysfs / "partition").exists():
            sysfs = sysfs.resolve().parent
        for key, rel in (("model", "device/model"), ("rotational", "queue/rotational"),
                         ("scheduler", "queue/scheduler")):
            p = sysfs / rel
            if p.exists():
                info[key] = p.read_text().strip()
    return info
