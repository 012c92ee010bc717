"""ext2 on the host kernel."""
from fslab.filesystems import register
from fslab.filesystems._ext import EXT2_CLAIMS, ExtDriver


@register
class Ext2(ExtDriver):
    name = fstype = "ext2"
    claims = property(lambda self: {"ext2": EXT2_CLAIMS})
    journal = False
