"""hosts.toml: which machines run the plan, how fslab reaches them, and in which mode.

    mode = "each"              # each: one host at a time (hardware comparison, like S0)
                               # parallel: all hosts at once (aggregate throughput)
    port = 8765                # default fio --server port

    [[host]]
    name = "nvme-box"          # the `host` of every record measured there
    address = "10.0.0.11"      # fio --server binds here; the coordinator connects here
    ssh = "admin@nvme-box"     # OpenSSH destination (your ~/.ssh/config applies), or "local"
    workdir = "/var/tmp/fslab-remote"   # loop images and mount points on that host

The same keys may sit in a plan's [hosts] table, or `[hosts] file = "hosts.toml"`.
Errors name the file, the line and the field, like plan errors.
"""
from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from fslab.plan import read_text, toml_data, validation_error

AGGREGATE_HOST = "all"     # the host of fio's "All clients" records in parallel mode
DEFAULT_PORT = 8765        # fio's own default port


class HostSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    address: str
    port: int | None = Field(None, ge=1, le=65535)     # None: the file's `port`
    ssh: str = "local"
    ssh_options: list[str] = []      # extra OpenSSH options, e.g. ["-p", "2222"]
    python: str = "python3"          # interpreter with fslab installed, on that host
    workdir: str | None = None       # default /var/tmp/fslab-remote/<name>
    netns: str | None = None         # local hosts: run the fio server inside this namespace
    # auto: reuse a server already listening there, else start one (and stop it afterwards)
    server: Literal["auto", "start", "reuse"] = "auto"

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", v):
            raise ValueError("use letters, digits, '.', '_' and '-' (it names directories)")
        if v in (AGGREGATE_HOST, "localhost"):
            raise ValueError(f"{v!r} is reserved; choose another name")
        return v

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str:
        if not v or any(c in v for c in " ,/"):
            raise ValueError("an IP address or host name, without port or path")
        return v

    @model_validator(mode="after")
    def _netns_is_local(self) -> "HostSpec":
        if self.netns and not self.is_local:
            raise ValueError("netns is only for local hosts (ssh = \"local\")")
        return self

    @property
    def is_local(self) -> bool:
        return self.ssh == "local"

    @property
    def workdir_path(self) -> str:
        return self.workdir or f"/var/tmp/fslab-remote/{self.name}"

    @property
    def fio_address(self) -> str:
        """fio's spelling of a server address: ip:ADDR,PORT or ip6:ADDR,PORT."""
        try:
            six = ipaddress.ip_address(self.address).version == 6
        except ValueError:
            six = False
        return f"{'ip6' if six else 'ip'}:{self.address},{self.port}"


class HostsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["parallel", "each"] = "each"
    port: int = Field(DEFAULT_PORT, ge=1, le=65535)
    host: list[HostSpec] = Field(min_length=1)
    source_text: str = Field("", exclude=True)

    @model_validator(mode="after")
    def _distinct(self) -> "HostsFile":
        names, endpoints = set(), set()
        for h in self.host:
            h.port = h.port or self.port
            if h.name in names:
                raise ValueError(f"host name {h.name!r} appears twice")
            if (h.address, h.port) in endpoints:
                raise ValueError(f"{h.address} port {h.port} is given to two hosts")
            names.add(h.name)
            endpoints.add((h.address, h.port))
        return self

    def by_name(self, name: str) -> HostSpec:
        return next(h for h in self.host if h.name == name)


def load(path: str | Path) -> HostsFile:
    return parse(read_text(path, "hosts file"), str(path))


def parse(text: str, source: str = "<hosts>") -> HostsFile:
    hosts = from_dict(toml_data(text, source), source, text)
    hosts.source_text = text
    return hosts


def from_dict(data: dict[str, Any], source: str, text: str = "", table: str = "") -> HostsFile:
    """Validate; `table` is where these keys sit in `text` ("hosts" inside a plan)."""
    try:
        return HostsFile.model_validate(data)
    except ValidationError as e:
        loc = e.errors()[0]["loc"]
        line_loc = loc
        if table and loc:   # [[host]] is spelled [[hosts.host]] in a plan
            line_loc = ((f"{table}.{loc[0]}", *loc[1:]) if loc[0] == "host" and len(loc) > 1
                        else (table, *loc))
        raise validation_error(e, text, source, (table,) if table else (),
                               line_loc) from None


def from_plan(table: dict[str, Any], plan_text: str, plan_path: str | None) -> HostsFile:
    """A plan's [hosts] table: the hosts themselves, or `file = "hosts.toml"` (beside the plan)."""
    source = plan_path or "<plan>"
    if "file" in table:
        rel = Path(table["file"])
        base = Path(source).parent if not source.startswith("<") else Path.cwd()
        return load(rel if rel.is_absolute() else base / rel)
    hosts = from_dict(table, source, plan_text, table="hosts")
    hosts.source_text = plan_text
    return hosts
