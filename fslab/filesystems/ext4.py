"""ext4 on the host kernel."""
from fslab.filesystems import register
from fslab.filesystems._ext import ExtDriver


@register
class Ext4(ExtDriver):
    name = fstype = "ext4"
    journal = True
    ioctls = frozenset({"EXT4_IOC_MOVE_EXT"})   # online defragmentation (e4defrag)
