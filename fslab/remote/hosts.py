"""hosts.toml: which machines run the plan, how fslab reaches them, and in which mode.

    mode = "each"              # each: one host at a time (hardware comparison, like S0)
                               # parallel: all hosts at once (aggregate throughput)
    port = 8765                # default fio --server port

    [[host]]
    name = "nvme-box"          # the `host` of every record measured there
    ssh = "admin@nvme-box"     # OpenSSH destination (your ~/.ssh/config applies), or "local"
    workdir = "/var/tmp/fslab-remote"   # loop images and mount points on that host
    # transport = "ssh" (default with ssh): fio's server listens on a Unix socket of the
    #   host in a 0700 directory of the SSH user, and its connection goes through the SSH
    #   connection; nothing listens on the network, no other local user reaches it
    # transport = "direct": fio's server binds `address` and fio connects there (no
    #   authentication: whoever reaches that address and port can run jobs as root)
    # address = "10.0.0.11"

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
from fslab.records import AGGREGATE_HOST
DEFAULT_PORT = 8765        # fio's own default port
LOOPBACK = "127.0.0.1"     # where a reused fio server listens on a host reached over SSH


class HostSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    address: str | None = None       # fio's server address; needed with transport "direct"
    port: int | None = Field(None, ge=1, le=65535)     # None: the file's `port`
    ssh: str = "local"
    # ssh: the server listens on a private Unix socket of the host (a reused one: on its
    # loopback) and fio's connection goes through the SSH connection (the default with ssh); direct: it binds `address` (the only way
    # for a local host, which has no SSH connection)
    transport: Literal["ssh", "direct"] | None = None
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
    def _address(cls, v: str | None) -> str | None:
        if v is not None and (not v or any(c in v for c in " ,/")):
            raise ValueError("an IP address or host name, without port or path")
        return v

    @model_validator(mode="after")
    def _netns_is_local(self) -> "HostSpec":
        if self.netns and not self.is_local:
            raise ValueError("netns is only for local hosts (ssh = \"local\")")
        return self

    @model_validator(mode="after")
    def _transport(self) -> "HostSpec":
        if self.transport is None:
            self.transport = "direct" if self.is_local else "ssh"
        if self.transport == "ssh" and self.is_local:
            raise ValueError("transport = \"ssh\" needs an SSH destination (ssh = \"local\" "
                             "has no SSH connection to carry fio's)")
        if self.transport == "direct" and self.address is None:
            raise ValueError("address is required with transport = \"direct\" (and for "
                             "local hosts): fio's server binds it and fio connects to it")
        return self

    @property
    def is_local(self) -> bool:
        return self.ssh == "local"

    @property
    def workdir_path(self) -> str:
        return self.workdir or f"/var/tmp/fslab-remote/{self.name}"

    @property
    def server_address(self) -> str:
        """Where fio's server listens on its host: the loopback when SSH carries fio (for a
        reused server; one fslab starts there listens on a Unix socket instead)."""
        return LOOPBACK if self.transport == "ssh" else self.address

    @property
    def fio_address(self) -> str:
        """fio's spelling of the server's address: ip:ADDR,PORT or ip6:ADDR,PORT."""
        try:
            six = ipaddress.ip_address(self.server_address).version == 6
        except ValueError:
            six = False
        return f"{'ip6' if six else 'ip'}:{self.server_address},{self.port}"


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
            if h.transport == "direct":     # the others listen on their own host
                if (h.address, h.port) in endpoints:
                    raise ValueError(f"{h.address} port {h.port} is given to two hosts")
                endpoints.add((h.address, h.port))
            names.add(h.name)
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
