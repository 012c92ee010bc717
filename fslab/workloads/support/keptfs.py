"""A filesystem that outlives its process: kept loop images plus a step journal.

Aging runs for hours; if fslab dies at pull 7000, the run must continue at pull
7001 on the same aged filesystem, not start over. So the aging unit keeps its
images under the results directory (not the temporary work directory), and
writes a journal after every completed step.

Crash safety, in the terms of fslab.system.state: the loop devices and mounts are noted
as usual (cleanup detaches/unmounts them), the image files are *not* noted as
"file" (cleanup would delete them), and a ZFS pool is noted with keep=True, which
cleanup exports instead of destroying. `discard()` deletes everything once the
unit has finished.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson

from fslab.filesystems.base import Driver, Instance
from fslab.plan import FilesystemSpec
from fslab.targets.loop import LoopTarget


class KeptImageTarget(LoopTarget):
    """Loop devices over image files in `directory` that release() leaves in place."""
    kind = "loop (kept image)"

    def image_name(self, label: str) -> str:
        return f"disk{len(self.devices)}.img"      # the same names when a resume re-attaches

    def create_image(self, image: Path, size_bytes: int) -> None:
        if not image.exists():   # never noted as a "file": cleanup must not delete it
            with open(image, "wb") as f:
                f.truncate(size_bytes)

    def discard_image(self, image: str) -> None:
        pass


class KeptFilesystem:
    """One aged filesystem and its journal, in `directory` (kept across crashes)."""

    def __init__(self, directory: Path, driver: Driver, spec: FilesystemSpec, workdir: Path,
                 label: str, size_bytes: int):
        self.directory = Path(directory)
        self.journal_path = self.directory / "journal.json"
        self.journal: dict[str, Any] = (orjson.loads(self.journal_path.read_bytes())
                                        if self.journal_path.exists() else {})
        self.inst = Instance(driver, spec, KeptImageTarget(self.directory), workdir, label,
                             self.journal.get("image_bytes", size_bytes))

    @property
    def resumed(self) -> bool:
        return bool(self.journal.get("made"))

    def open(self) -> None:
        """mkfs the first time; afterwards re-attach the kept images and mount them."""
        inst = self.inst
        if self.resumed:
            inst.acquire()
            inst.driver.resume_kept(inst, self.journal)
            inst.made = True
        else:
            inst.mkfs()
            self.journal.update(made=True, **inst.driver.keep_across_crash(inst),
                                image_bytes=inst.size_bytes)
            self.save()
        inst.mount()

    def save(self) -> None:
        """Write the journal atomically and durably (a crash leaves the old or the new one)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.journal_path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            f.write(orjson.dumps(self.journal, option=orjson.OPT_INDENT_2))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.journal_path)

    def close(self) -> None:
        """Unmount and detach, keeping the images (a ZFS pool is exported, not destroyed)."""
        inst = self.inst
        try:
            inst.unmount()
            inst.driver.set_aside_kept(inst)
        finally:
            inst.target.release()
            try:
                inst.mountpoint.rmdir()
            except OSError:
                pass

    def discard(self) -> None:
        """The unit is finished: destroy the pool, detach, delete the images and journal."""
        self.inst.close()          # unmount, destroy (zpool), release (detach)
        shutil.rmtree(self.directory, ignore_errors=True)
        for parent in self.directory.parents:   # and the directories that held only it
            try:
                parent.rmdir()
            except OSError:
                break
