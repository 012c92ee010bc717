"""Each driver's option catalogue (Driver.catalogue): its shape (fast), and every value
verified on this machine's tools and kernel with the options probe (e2e)."""
from __future__ import annotations

import json

import pytest

from conftest import fslab_in_process, needs_root, run_fslab
from fslab import filesystems
from fslab.filesystems.base import OPTION_KINDS, SAFETY
from fslab.plan import FilesystemSpec

CATALOGUED = ("ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "tmpfs")


def entries():
    return [(name, o) for name in CATALOGUED for o in filesystems.get(name).catalogue]


def test_every_catalogued_filesystem_has_safe_and_traded_options():
    for name in CATALOGUED:
        safety = {o.safety for o in filesystems.get(name).catalogue}
        assert "safe" in safety, name
        if name != "tmpfs":   # tmpfs keeps nothing across a crash: nothing left to trade
            assert "trade" in safety, name


@pytest.mark.parametrize("name, option", entries(), ids=lambda x: getattr(x, "key", x))
def test_each_entry_says_what_it_costs_and_where_it_is_documented(name, option):
    driver = filesystems.get(name)
    assert option.kind in OPTION_KINDS and option.safety in SAFETY and option.values
    assert option.effect and option.source
    assert bool(option.trades) == (option.safety == "trade")   # a trade says what it gives up
    assert set(option.implementations) <= set(driver.feature_claims), option.implementations
    if option.kind in ("property", "pool_property"):
        assert driver.takes_properties
    for value in option.values:
        spec = FilesystemSpec(name=name, variant="v", **option.spec_fields(value))
        if option.kind == "mount":
            assert spec.mount_options == [value]
        elif option.kind == "mkfs":
            assert " ".join(spec.mkfs_options) == value
        else:
            key, _, val = value.partition("=")
            assert {**spec.properties, **spec.pool_properties} == {key: val}


def test_the_catalogue_only_lists_values_the_implementation_here_takes():
    zfs = filesystems.get("zfs")
    assert len(zfs.option_catalogue("zfs")) > len(zfs.option_catalogue("zfs-fuse"))
    assert all(not o.implementations or "zfs-fuse" in o.implementations
               for o in zfs.option_catalogue("zfs-fuse"))


def test_fslab_options_prints_the_catalogue():
    rows = json.loads(fslab_in_process("options", "--json").stdout)["options"]
    assert {r["filesystem"] for r in rows} >= set(CATALOGUED)
    wb = next(r for r in rows if "data=writeback" in r["values"] and r["filesystem"] == "ext4")
    assert wb["class"] == "trade" and "stale" in wb["trades"] and wb["how"] == ["-o data=writeback"]
    sync = next(r for r in rows if r["option"] == "sync" and "sync=disabled" in r["values"])
    assert sync["only_on"] == ["zfs"] and sync["class"] == "trade"
    text = fslab_in_process("options", "zfs").stdout
    assert "recordsize=8k" in text and "only OpenZFS" in text and "ext4" not in text


@needs_root()
def test_every_catalogue_value_is_accepted_here(state_dir):
    """Each value, made and mounted on a scratch image by the probe, one after the other (the
    zfs-fuse daemon is shared: nothing in parallel). Values of the other ZFS implementation
    (OpenZFS only, when zfs-fuse runs here) must be refused: that is what their mark says."""
    from fslab.run.probe import probe
    from fslab.run.session import end_driver_sessions
    refused, notes, checked = [], [], 0
    try:
        for name in CATALOGUED:
            driver = filesystems.get(name)
            if not driver.available().ok:
                continue
            here = driver.implementation()
            for option in driver.catalogue:
                for value in option.values:
                    spec = FilesystemSpec(name=name, variant="v", **option.spec_fields(value))
                    result = probe(driver, spec)
                    checked += 1
                    expected = not option.implementations or here in option.implementations
                    if result.ok != expected:
                        refused.append(f"{name} {value}: {'accepted' if result.ok else result.why}"
                                       f" (expected {'accepted' if expected else 'refused'})")
                    notes += [f"{name} {value}: {n}" for n in result.notes]
    finally:
        end_driver_sessions(CATALOGUED, print)
    assert checked > 80
    assert not refused, "\n".join(refused)
    # read back as asked; zfs-fuse takes ashift but `zpool get` cannot show it
    assert all("ashift" in n for n in notes), "\n".join(notes)
