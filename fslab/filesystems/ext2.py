"""ext2 on the host kernel."""
from fslab.filesystems import register
from fslab.filesystems._ext import ExtDriver


@register
class Ext2(ExtDriver):
    name = fstype = "ext2"
    journal = False
