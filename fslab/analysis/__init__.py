"""One statistics engine for every suite: records in, comparison tables out."""
from fslab.analysis.engine import Analysis, analyze, is_detail
from fslab.analysis.groups import FS_FACTOR

__all__ = ["Analysis", "analyze", "is_detail", "FS_FACTOR"]
