"""ext3 on the host kernel."""
from fslab.filesystems import register
from fslab.filesystems._ext import EXT3_CLAIMS, ExtDriver


@register
class Ext3(ExtDriver):
    name = fstype = "ext3"
    claims = property(lambda self: {"ext3": EXT3_CLAIMS})
    journal = True
