"""ext2 on the host kernel."""
from fslab.filesystems import register
from fslab.filesystems._ext import EXT2_FEATURE_CLAIMS, ExtDriver, ext_catalogue


@register
class Ext2(ExtDriver):
    name = fstype = "ext2"
    feature_claims = property(lambda self: {"ext2": EXT2_FEATURE_CLAIMS})
    catalogue = ext_catalogue(journal=False, ext4=False)
    journal = False
