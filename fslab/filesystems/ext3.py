"""ext3 on the host kernel."""
from fslab.filesystems import register
from fslab.filesystems._ext import ExtDriver


@register
class Ext3(ExtDriver):
    name = fstype = "ext3"
    journal = True
