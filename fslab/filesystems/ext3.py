"""ext3 on the host kernel."""
from fslab.filesystems import register
from fslab.filesystems._ext import EXT3_FEATURE_CLAIMS, ExtDriver, ext_catalogue


@register
class Ext3(ExtDriver):
    name = fstype = "ext3"
    feature_claims = property(lambda self: {"ext3": EXT3_FEATURE_CLAIMS})
    catalogue = ext_catalogue(journal=True, ext4=False)
    journal = True
