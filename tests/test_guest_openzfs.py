"""OpenZFS in the guest image: the module build's pieces, its failure contract, and
(in tests/test_guest.py's shared guest run) kernel ZFS measured inside the guest."""
from __future__ import annotations

import json

import pytest

from fslab.guest import image, openzfs


def test_upstream_version_names_the_source_dir_and_module():
    assert openzfs.upstream_version("2.3.2-2~bpo12+2") == "2.3.2"
    assert openzfs.upstream_version("1:2.1.11-1+deb12u1") == "2.1.11"
    assert openzfs.label("2.3.2") == "OpenZFS 2.3.2 kernel module"


def test_image_key_changes_with_where_openzfs_comes_from(monkeypatch):
    kernel = ("linux-image-6.1.0-56-amd64", "6.1.192-2")
    key, ingredients = image.image_key(kernel)
    assert ingredients["openzfs"]["suite"] == "bookworm-backports"
    monkeypatch.setattr(openzfs, "SUITE", "bookworm")
    assert image.image_key(kernel)[0] != key


def test_headers_makefile_points_at_the_unpacked_common_tree(tmp_path):
    src = tmp_path / "usr" / "src"
    obj = src / "linux-headers-6.1.0-56-amd64"
    common = src / "linux-headers-6.1.0-56-common"
    obj.mkdir(parents=True)
    common.mkdir()
    (obj / "Makefile").write_text("include /usr/src/linux-headers-6.1.0-56-common/Makefile\n")
    openzfs._fix_headers_makefile(tmp_path, "6.1.0-56-amd64")
    assert (obj / "Makefile").read_text() == f"include {common}/Makefile\n"


@pytest.mark.e2e   # runs apt-get (against a closed local port): seconds, not the fast tier
def test_a_failed_openzfs_step_is_one_line_and_leaves_the_reason_in_the_rootfs(
        tmp_path, monkeypatch):
    # a mirror nobody listens on: apt-get update fails, as when contrib is unreachable
    monkeypatch.setenv("FSLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FSLAB_DEBIAN_MIRROR", "http://127.0.0.1:9/debian")
    rootfs = tmp_path / "rootfs"
    (rootfs / "var" / "lib" / "dpkg").mkdir(parents=True)
    logged = []
    got = openzfs.install(rootfs, "6.1.0-56-amd64", "6.1.192-2", logged.append)
    assert got["ok"] is False
    assert got["why"] and "\n" not in got["why"]
    note = (rootfs / openzfs.UNAVAILABLE_NOTE.lstrip("/")).read_text()
    assert note.startswith("OpenZFS not in this guest image: ") and got["why"] in note
    assert any("not installed in the guest image" in m for m in logged)
    assert not (rootfs / "lib" / "modules").exists()
    # doctor's line says why
    assert openzfs.describe({"openzfs": got}).startswith("OpenZFS kernel module: not built: ")


def test_doctor_line_for_a_built_image():
    z = {"ok": True, "version": "2.3.2", "label": "OpenZFS 2.3.2 kernel module",
         "kernel": "6.1.0-56-amd64", "module_package": "zfs-dkms=2.3.2-2~bpo12+2"}
    line = openzfs.describe({"openzfs": z})
    assert line == ("OpenZFS 2.3.2 kernel module for 6.1.0-56-amd64: built "
                    "(zfs-dkms=2.3.2-2~bpo12+2)")
    json.dumps(z)   # the manifest entry is plain JSON
