"""fslab: compare Linux filesystems with evidence."""

__version__ = "0.1.0"
