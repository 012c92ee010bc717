"""The work fslab does *on* a host: filesystems, environment, fio server.

`LocalHost` runs it in this process with the core drivers. For a local host the
coordinator uses it directly; on a remote host `python3 -m fslab.remote.agent`
serves the same object over SSH, so both kinds share every line of it. Arguments and
results are plain JSON-able values for that reason.
"""
from __future__ import annotations

import os
from pathlib import Path

from fslab import filesystems
from fslab.system import environment
from fslab.errors import StepFailed
from fslab.filesystems.base import Instance
from fslab.plan import FilesystemSpec
from fslab.remote.server import FioServer
from fslab.run.session import end_driver_sessions
from fslab.targets.loop import LoopTarget, backing_device_of


class LocalHost:
    """Filesystems under `workdir` (loop images + mount points) and one fio server."""

    def __init__(self, workdir: str | Path, netns: str | None = None):
        self.workdir = Path(workdir)
        self.netns = netns
        self.instances: dict[str, Instance] = {}
        self.server: FioServer | None = None
        self.drivers_used: set[str] = set()   # for their session_end (e.g. zfs-fuse daemon)

    def environment(self, fs_names: list[str]) -> dict:
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = environment.capture(filesystems.tool_versions(fs_names), {"kind": "loop", "workdir": str(self.workdir),
                                             "backing": backing_device_of(str(self.workdir))})
        if self.netns:
            env["netns"] = self.netns
        return env

    def start_server(self, fio_address: str, address: str, port: int, policy: str) -> dict:
        self.server = FioServer(fio_address, address, port, self.netns)
        started = self.server.ensure(policy, self.workdir / f"fio-server-{port}.log")
        return {"started": started}

    def prepare(self, spec: dict, size_bytes: int, label: str) -> dict:
        """mkfs + mount a fresh filesystem; its mount point and what is in effect."""
        if label in self.instances:
            raise StepFailed(f"filesystem {label} is already prepared on this host")
        fs = FilesystemSpec.model_validate(spec)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.drivers_used.add(fs.name)
        inst = Instance(filesystems.get(fs.name), fs, LoopTarget(self.workdir), self.workdir,
                        label, size_bytes)
        inst.__enter__()       # tears down what it made if a step fails
        self.instances[label] = inst
        return {"mountpoint": str(inst.mountpoint), "filesystem": inst.effective()}

    def release(self, label: str) -> dict:
        """Unmount and destroy; says how many entries the filesystem held (fio's files)."""
        inst = self.instances.pop(label, None)
        if inst is None:
            return {"entries": None}
        try:
            entries = len([e for e in os.listdir(inst.mountpoint) if e != "lost+found"])
        finally:
            inst.close()
        return {"entries": entries}

    def lost(self) -> str | None:
        """Why this host can no longer run jobs, if it cannot (its fio server died)."""
        proc = self.server.proc if self.server is not None else None
        if proc is not None and proc.poll() is not None:
            return f"its fio server exited ({proc.returncode})"
        return None

    def close(self) -> list[str]:
        """Tear down everything still here; the errors met (teardown goes on past them)."""
        errors = []
        # the server first: after a lost connection a job of its may still be writing to
        # a filesystem below, which then could not be unmounted
        if self.server is not None:
            try:
                self.server.stop()
            except Exception as e:
                errors.append(f"fio server: {e}")
        for label in list(self.instances):
            try:
                self.release(label)
            except Exception as e:
                errors.append(f"{label}: {e}")
        end_driver_sessions(self.drivers_used, errors.append)
        try:
            self.workdir.rmdir()      # only if empty: never a user's files
        except OSError:
            pass
        return errors
