"""The capture's own account of what it left out (docs/replay.md): calls it could not
replay, by kind and by where they were, with the bytes they moved, and the files the
command mmap'd. Stored with the replay (format version 2) and said first wherever a
replay's numbers are shown: a replay that lost much of the command's I/O in the
directory predicts the command only in part.

Two places a call can be left out:
- elsewhere: on a path outside the directory (libraries, /etc, /tmp, the terminal); not
  the filesystem under test, by design of the capture;
- here: on a file *in* the directory that the capture could not follow (an fd opened
  before the capture, a redirection of the calling shell): lost from the replay.
mmap'd files in the directory are lost too: their page I/O never passes through a call.
"""
from __future__ import annotations

from dataclasses import dataclass, field

KINDS = ("read", "write", "sync", "metadata")
WHERE = ("here", "elsewhere")
# a replay that lost more than this share of the command's bytes or syncs in the
# directory says so in its answer line
LOSS_SHARE = 0.10


@dataclass
class Left:
    calls: int = 0
    bytes: int = 0


@dataclass
class Mapped:
    """A file of the directory the command mmap'd."""
    count: int = 0
    bytes: int = 0            # the largest mapping's length (0: unknown, a version-1 file)
    writable: bool = False    # a shared writable mapping: its stores reach the file

    @property
    def written(self) -> int:
        return self.bytes if self.writable else 0


@dataclass
class Account:
    left: dict[tuple[str, str], Left] = field(default_factory=dict)   # (where, kind) ->
    mmaps: dict[str, Mapped] = field(default_factory=dict)
    split: bool = True        # False: a version-1 file, whose left-out calls are one count

    def add(self, where: str, kind: str, size: int = 0) -> None:
        cell = self.left.setdefault((where, kind), Left())
        cell.calls += 1
        cell.bytes += max(size, 0)

    def calls(self, where: str, kind: str | None = None) -> int:
        return sum(v.calls for (w, k), v in self.left.items() if w == where and kind in (None, k))

    def bytes(self, where: str, kind: str) -> int:
        return sum(v.bytes for (w, k), v in self.left.items() if w == where and k == kind)

    def lost(self, replayed_bytes: int, replayed_syncs: int) -> list[str]:
        """The losses above LOSS_SHARE of what the command did in the directory, one
        phrase each (empty: the replay holds nearly all of it)."""
        out = []
        mapped = sum(m.bytes for m in self.mmaps.values())
        lost_bytes = mapped + self.bytes("here", "read") + self.bytes("here", "write")
        if lost_bytes and lost_bytes > LOSS_SHARE * (replayed_bytes + lost_bytes):
            share = lost_bytes / (replayed_bytes + lost_bytes)
            what = "mmap'd files" if mapped >= lost_bytes - mapped else "calls it could not follow"
            out.append(f"{share:.0%} of the command's bytes in the directory not replayed ({what})")
        lost_syncs = self.calls("here", "sync")
        if lost_syncs and lost_syncs > LOSS_SHARE * (replayed_syncs + lost_syncs):
            out.append(f"{lost_syncs} of its {replayed_syncs + lost_syncs} syncs not replayed")
        return out

    def lines(self, replayed_bytes: int, replayed_syncs: int) -> list[str]:
        """What the capture left out, said in a few lines (first wherever the replay's
        numbers are shown)."""
        out = [f"LOST: {p}" for p in self.lost(replayed_bytes, replayed_syncs)]
        if not replayed_bytes and not any(m.bytes for m in self.mmaps.values()):
            out.append("the command moved no bytes in the directory: the replay is metadata only")
        here = self.calls("here")
        if here:
            out.append(f"left out in the directory (fds the capture could not follow): "
                       f"{self._by_kind('here')}")
        if self.split:
            out.append(f"outside the directory, not replayed: {self._by_kind('elsewhere')}")
        else:
            out.append(f"outside the directory, not replayed: {self.calls('elsewhere')} calls")
        if self.mmaps:
            shown = sorted(self.mmaps.items(), key=lambda kv: -kv[1].bytes)
            files = ", ".join(f"{p} ({_size(m.bytes)}{', shared writable' if m.writable else ''})"
                              for p, m in shown[:4])
            more = f" and {len(shown) - 4} more" if len(shown) > 4 else ""
            out.append(f"mmap'd, page I/O not replayed: {files}{more}")
        return out

    def _by_kind(self, where: str) -> str:
        parts = []
        for k in KINDS:
            n = self.calls(where, k)
            if n:
                b = self.bytes(where, k)
                parts.append(f"{k} {n}" + (f" ({_size(b)})" if b else ""))
        return ", ".join(parts) or "nothing"

    def to_dict(self) -> dict:
        """For the run's environment (the report's and decide's source)."""
        return {"left": {f"{w}:{k}": [v.calls, v.bytes] for (w, k), v in sorted(self.left.items())},
                "mmaps": {p: [m.count, m.bytes, m.writable] for p, m in sorted(self.mmaps.items())},
                "split": self.split}

    @classmethod
    def from_dict(cls, d: dict) -> "Account":
        a = cls(split=bool(d.get("split", True)))
        for key, (calls, size) in (d.get("left") or {}).items():
            where, _, kind = key.partition(":")
            a.left[(where, kind)] = Left(int(calls), int(size))
        for p, (count, size, writable) in (d.get("mmaps") or {}).items():
            a.mmaps[p] = Mapped(int(count), int(size), bool(writable))
        return a


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
