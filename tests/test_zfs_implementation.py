"""The ZFS implementation (kernel OpenZFS or zfs-fuse) is a driver property that every
environment names, so no ZFS number is read as the other implementation's."""
import pytest

from fslab import filesystems
from fslab.system.environment import tool_versions
from fslab.features.claims import implementation_key
from fslab.filesystems import zfs
from fslab.system.proc import which


def test_plain_drivers_are_their_own_implementation():
    ext4 = filesystems.get("ext4")
    assert ext4.implementation() == "ext4" == ext4.implementation_label()
    assert implementation_key("ext4") == "ext4"
    assert "ext4 implementation" not in tool_versions(["ext4"])


@pytest.mark.skipif(not which("zpool"), reason="no zpool tools on this host")
def test_zfs_environment_names_implementation_and_version():
    drv = filesystems.get("zfs")
    label = tool_versions(["zfs"])["zfs implementation"]
    assert label == drv.implementation_label()
    if zfs.kernel_zfs():
        assert drv.implementation() == implementation_key("zfs") == "zfs"
        assert label.startswith("OpenZFS ") and label.endswith("kernel module")
    else:
        assert drv.implementation() == implementation_key("zfs") == "zfs-fuse"
        assert label.startswith("zfs-fuse 0.") and "FUSE" in label
