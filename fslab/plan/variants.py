"""`--fs`'s little language: filesystems, their variants and each variant's own options.

    --fs 'ext4,ext4:wb[-o data=writeback,commit=30],xfs:big[-m "-l size=64m"],zfs:rs8k[-p recordsize=8k]'

An item is NAME[:VARIANT][[OPTIONS]]. OPTIONS are words as a shell splits them (quotes and
backslashes work the same way), each flag followed by its value:

    -o OPTS       mount options, comma-separated (mount -o); repeatable
    -m ARGS       mkfs arguments, split as a shell would: -m '-O ^has_journal'; repeatable
    -p KEY=VALUE  a ZFS dataset property (zfs create -O); repeatable
    -P KEY=VALUE  a ZFS pool property (zpool create -o); repeatable

Commas inside the brackets belong to the options, not to the list. A variant with options
must be named (`ext4:wb[...]`, never `ext4[...]`): the name is its column in every report.
Errors are one line naming the column of the text where the parser stopped.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fslab.errors import FslabError
from fslab.records import DEFAULT_VARIANT, level_label

if TYPE_CHECKING:                       # plan/__init__.py imports this module
    from fslab.plan import FilesystemSpec

_NAME = re.compile(r"[A-Za-z0-9_.+-]+")
FLAGS = {"-o": "mount options", "-m": "mkfs arguments", "-p": "a ZFS dataset property",
         "-P": "a ZFS pool property"}
_SAFE = re.compile(r"[A-Za-z0-9_.+=,:/@%^-]+")   # words that need no quotes
SYNTAX = "NAME[:VARIANT][[-o MOUNT,OPTS] [-m 'MKFS ARGS'] [-p PROP=VALUE] [-P POOLPROP=VALUE]]"


@dataclass
class Variant:
    """One item of --fs: what the plan's [[filesystem]] table says, from the command line."""
    name: str
    variant: str = DEFAULT_VARIANT
    mkfs_options: list[str] = field(default_factory=list)
    mount_options: list[str] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    pool_properties: dict[str, str] = field(default_factory=dict)
    has_options: bool = False    # brackets were given (even empty ones)

    @property
    def label(self) -> str:
        return level_label(self.name, self.variant)


class SyntaxProblem(FslabError):
    code = 2


def parse_fs(text: str, flag: str = "--fs") -> list[Variant]:
    """Every item of `text`, in order; SyntaxProblem (exit 2) names the column at fault."""
    return _Parser(text, flag).items()


class _Parser:
    def __init__(self, text: str, flag: str):
        self.text, self.flag, self.i = text, flag, 0

    def fail(self, message: str, at: int | None = None, syntax: bool = True) -> SyntaxProblem:
        col = (self.i if at is None else at) + 1
        return SyntaxProblem(f"{self.flag} {self.text!r}: column {col}: {message}"
                             + (f" (each item: {SYNTAX})" if syntax else ""))

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def items(self) -> list[Variant]:
        out: list[Variant] = []
        if not self.text.strip():
            raise self.fail("no filesystem named")
        while True:
            self.skip_spaces()
            out.append(self.item())
            self.skip_spaces()
            if not self.peek():
                return out
            if self.peek() != ",":
                raise self.fail(f"expected ',' or the end, found {self.peek()!r}")
            self.i += 1

    def skip_spaces(self) -> None:
        while self.peek() in (" ", "\t") and self.peek():
            self.i += 1

    def word(self, what: str) -> str:
        m = _NAME.match(self.text, self.i)
        if not m:
            found = repr(self.peek()) if self.peek() else "the end"
            raise self.fail(f"expected {what} (letters, digits, _ . + -), found {found}")
        self.i = m.end()
        return m.group()

    def item(self) -> Variant:
        v = Variant(name=self.word("a filesystem name"))
        if self.peek() == ":":
            self.i += 1
            v.variant = self.word("a variant name after ':'")
        if self.peek() == "[":
            start = self.i
            body, body_at = self.bracket()
            v.has_options = True
            if v.variant == DEFAULT_VARIANT:
                raise self.fail(f"name this option set: {v.name}:NAME[...] (the name is its "
                                f"column in every report; '{v.name}' alone means fslab's "
                                "defaults)", start, False)
            self.options(v, body, body_at)
        return v

    def bracket(self) -> tuple[str, int]:
        """The text between '[' and its ']' (quotes may hold either bracket or commas)."""
        open_at = self.i
        self.i += 1
        quote, quote_at = "", 0
        while self.i < len(self.text):
            c = self.text[self.i]
            if quote:
                if c == "\\" and quote == '"':
                    self.i += 1
                elif c == quote:
                    quote = ""
            elif c == "\\":
                self.i += 1
            elif c in "'\"":
                quote, quote_at = c, self.i
            elif c == "[":
                raise self.fail("'[' inside options: quote it", self.i)
            elif c == "]":
                self.i += 1
                return self.text[open_at + 1:self.i - 1], open_at + 1
            self.i += 1
        if quote:
            raise self.fail(f"the quote {quote} opened here is never closed", quote_at)
        raise self.fail("the '[' opened here is never closed", open_at)

    def options(self, v: Variant, body: str, at: int) -> None:
        words = _words(body, at)
        k = 0
        while k < len(words):
            flag, col = words[k]
            if flag not in FLAGS and not flag.startswith("-"):
                raise self.fail(f"{flag!r} follows no flag: each value follows its flag, and "
                                "a value with spaces is quoted (-m '-O ^has_journal')", col, False)
            if flag not in FLAGS:
                raise self.fail(f"unknown flag {flag!r} (mkfs arguments go after -m, quoted: "
                                "-m '-O ^has_journal'); the flags: "
                                + ", ".join(f"{f} {w}" for f, w in FLAGS.items()), col, False)
            if k + 1 >= len(words):
                raise self.fail(f"{flag} needs a value ({FLAGS[flag]})", col, False)
            value, vcol = words[k + 1]
            k += 2
            if flag == "-o":
                opts = value.split(",")
                if any(not o.strip() for o in opts):
                    raise self.fail(f"-o {value!r}: an empty mount option (two commas, or one "
                                    "at an end)", vcol, False)
                v.mount_options += [o.strip() for o in opts]
            elif flag == "-m":
                try:
                    args = shlex.split(value)
                except ValueError as e:
                    raise self.fail(f"-m {value!r}: {e}", vcol, False) from None
                if not args:
                    raise self.fail("-m needs mkfs arguments", vcol, False)
                v.mkfs_options += args
            else:
                key, eq, val = value.partition("=")
                if not eq or not key or not val:
                    raise self.fail(f"{flag} {value!r}: expected KEY=VALUE "
                                    f"(e.g. {flag} recordsize=8k)", vcol, False)
                (v.properties if flag == "-p" else v.pool_properties)[key] = val


def _words(body: str, at: int) -> list[tuple[str, int]]:
    """Words of `body` split as a POSIX shell splits them ('...' literal, "..." with \\
    escapes, a backslash outside quotes), each with the column in the whole text where it
    starts. bracket() has already refused an unclosed quote."""
    out: list[tuple[str, int]] = []
    i, n = 0, len(body)
    while True:
        while i < n and body[i] in " \t":
            i += 1
        if i >= n:
            return out
        start, buf = i, []
        while i < n and body[i] not in " \t":
            c = body[i]
            if c == "'":
                j = body.index("'", i + 1)
                buf.append(body[i + 1:j])
                i = j + 1
            elif c == '"':
                i += 1
                while body[i] != '"':
                    if body[i] == "\\" and body[i + 1] in '"\\$`':
                        i += 1
                    buf.append(body[i])
                    i += 1
                i += 1
            elif c == "\\" and i + 1 < n:
                buf.append(body[i + 1])
                i += 2
            else:
                buf.append(c)
                i += 1
        out.append(("".join(buf), at + start))


def spec_fields(v: Variant) -> dict:
    """The [[filesystem]] keys of a parsed item (what FilesystemSpec takes)."""
    return {"name": v.name, "variant": v.variant, "mkfs_options": list(v.mkfs_options),
            "mount_options": list(v.mount_options), "properties": dict(v.properties),
            "pool_properties": dict(v.pool_properties)}


def item_text(spec: Variant | FilesystemSpec) -> str:
    """A variant as --fs would name it (the inverse of parse_fs): NAME[:VARIANT][[...]]."""
    words = []
    if spec.mount_options:
        words += ["-o", ",".join(spec.mount_options)]
    if spec.mkfs_options:
        words += ["-m", " ".join(w if _SAFE.fullmatch(w) else shlex.quote(w)
                                 for w in spec.mkfs_options)]
    words += [w for k, v in spec.properties.items() for w in ("-p", f"{k}={v}")]
    words += [w for k, v in spec.pool_properties.items() for w in ("-P", f"{k}={v}")]
    if not words:
        return spec.label
    quoted = [w if _SAFE.fullmatch(w) else '"' + w.replace(
        "\\", "\\\\").replace('"', '\\"') + '"' for w in words]
    return f"{spec.label}[{' '.join(quoted)}]"
