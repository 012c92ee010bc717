"""OpenZFS in the guest image: the module build's pieces, its failure contract, and
(in tests/test_guest.py's shared guest run) kernel ZFS measured inside the guest."""
from __future__ import annotations

import json

import pytest

from fslab.errors import FslabError
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


@pytest.mark.e2e   # the same closed mirror: the image build stops, nothing is cached
def test_an_image_whose_openzfs_failed_is_not_built(tmp_path, monkeypatch):
    monkeypatch.setenv("FSLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FSLAB_DEBIAN_MIRROR", "http://127.0.0.1:9/debian")
    monkeypatch.delenv(openzfs.WITHOUT_ENV, raising=False)
    rootfs = tmp_path / "rootfs"
    (rootfs / "var" / "lib" / "dpkg").mkdir(parents=True)
    with pytest.raises(FslabError, match=r"^guest image not built: OpenZFS: .*"
                                         + openzfs.WITHOUT_ENV):
        image.openzfs_part(rootfs, "6.1.0-56-amd64", "6.1.192-2", True, lambda m: None)
    # asked for without it: the note says so and the key is another image's
    monkeypatch.setenv(openzfs.WITHOUT_ENV, "1")
    got = image.openzfs_part(rootfs, "6.1.0-56-amd64", "6.1.192-2", False, lambda m: None)
    assert got["ok"] is False and openzfs.WITHOUT_ENV in got["why"]
    kernel = ("linux-image-6.1.0-56-amd64", "6.1.192-2")
    without = image.image_key(kernel)
    monkeypatch.delenv(openzfs.WITHOUT_ENV)
    assert without[1]["openzfs"] is None and image.image_key(kernel)[0] != without[0]


def test_depends_fields_parse_with_their_relations():
    field = ("linux-headers-6.1.0-56-common (= 6.1.192-2), linux-kbuild-6.1 (>= 6.1.192-2), "
             "linux-compiler-gcc-12-x86, foo | bar (<< 2)")
    assert openzfs.parse_depends(field) == [
        ("linux-headers-6.1.0-56-common", "=", "6.1.192-2"),
        ("linux-kbuild-6.1", ">=", "6.1.192-2"), ("linux-compiler-gcc-12-x86", "", ""),
        ("foo", "", "")]
    # dpkg's own order: a newer Debian revision meets >=, a tilde sorts before its base
    assert openzfs.satisfies("6.1.192-3", ">=", "6.1.192-2")
    assert not openzfs.satisfies("6.1.176-1", ">=", "6.1.192-2")
    assert not openzfs.satisfies("2.3.2~bpo12+1", ">=", "2.3.2")
    assert openzfs.satisfies("1:1.0", ">>", "9.9")
    assert openzfs.satisfies("anything", "", "")


@pytest.mark.e2e   # reads the host's apt lists
def test_guest_headers_come_at_the_versions_their_own_depends_allow():
    # the defect: kbuild was pinned to the kernel's version string (6.1.192-2) while the
    # archive served only 6.1.192-3, which the headers' "(>= 6.1.192-2)" accepts
    name, version = image.kernel_package()
    release = name.removeprefix("linux-image-")
    deps = dict(openzfs.header_deps(release, version))
    assert any(n.startswith("linux-kbuild-") for n in deps)
    assert any(n.endswith("-common") for n in deps)
    for dep, chosen in deps.items():
        served = openzfs.run(["apt-cache", "madison", dep], timeout=60).stdout
        assert f" {chosen} " in served, (dep, chosen, served)


def test_doctor_line_for_a_built_image():
    z = {"ok": True, "version": "2.3.2", "label": "OpenZFS 2.3.2 kernel module",
         "kernel": "6.1.0-56-amd64", "module_package": "zfs-dkms=2.3.2-2~bpo12+2"}
    line = openzfs.describe({"openzfs": z})
    assert line == ("OpenZFS 2.3.2 kernel module for 6.1.0-56-amd64: built "
                    "(zfs-dkms=2.3.2-2~bpo12+2)")
    json.dumps(z)   # the manifest entry is plain JSON
