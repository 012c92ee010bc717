"""ext4 on the host kernel."""
from fslab.filesystems import register
from fslab.filesystems._ext import EXT4_FEATURE_CLAIMS, ExtDriver, ext_catalogue
from fslab.filesystems.base import Enable


@register
class Ext4(ExtDriver):
    name = fstype = "ext4"
    feature_claims = property(lambda self: {"ext4": EXT4_FEATURE_CLAIMS})
    catalogue = ext_catalogue(journal=True, ext4=True)
    journal = True
    ioctls = frozenset({"EXT4_IOC_MOVE_EXT"})   # online defragmentation (e4defrag)

    def inline_data_enable(self) -> Enable:
        return Enable(mkfs_options=["-O", "inline_data"])   # opt-in, see ext4(5)
