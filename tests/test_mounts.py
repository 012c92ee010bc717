"""The one reader of the kernel's mount table: escaped mount points are decoded."""
from __future__ import annotations

import subprocess

from conftest import needs_root
from fslab.system import mounts
from fslab.system.teardown import is_mounted

LINES = (
    "22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw,errors=remount-ro\n"
    "99 22 0:51 / /tmp/a\\040b rw,nosuid - tmpfs my\\040src rw,size=1024k\n"
    "100 99 7:3 / /tmp/a\\040b/inner\\134x rw - xfs /dev/loop3 rw,attr2\n"
)


def test_parse_decodes_octal_escapes_and_splits_fields():
    root, spaced, inner = mounts.parse(LINES)
    assert spaced.mountpoint == "/tmp/a b" and spaced.source == "my src"
    assert spaced.fstype == "tmpfs" and spaced.options == "rw,nosuid"
    assert spaced.super_options == "rw,size=1024k" and spaced.device == (0, 51)
    assert inner.mountpoint == "/tmp/a b/inner\\x" and inner.device == (7, 3)
    assert root.holds("/tmp/a b") and spaced.holds("/tmp/a b/c") and not spaced.holds("/tmp/a bc")


@needs_root()
def test_a_mount_point_with_a_space_reads_as_mounted(tmp_path):
    where = tmp_path / "with space"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "fslab test", str(where)], check=True,
                   timeout=30)
    try:
        assert is_mounted(str(where))
        m = mounts.mount_at(str(where))
        assert m.fstype == "tmpfs" and m.source == "fslab test"
        assert mounts.mount_holding(str(where / "x")).mountpoint == str(where)
        assert mounts.mounted_under(str(tmp_path)) == [str(where)]
    finally:
        subprocess.run(["umount", str(where)], check=True, timeout=30)
    assert not is_mounted(str(where))
