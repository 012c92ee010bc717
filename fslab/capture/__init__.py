"""Capturing a command's file I/O (strace) into a replay file (docs/replay.md)."""
