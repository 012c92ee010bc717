"""ext2 on the host kernel."""
from fslab.filesystems import register
from fslab.filesystems._ext import EXT2_CLAIMS, ExtDriver, ext_catalogue


@register
class Ext2(ExtDriver):
    name = fstype = "ext2"
    claims = property(lambda self: {"ext2": EXT2_CLAIMS})
    catalogue = ext_catalogue(journal=False, ext4=False)
    journal = False
