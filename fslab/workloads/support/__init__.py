"""Code the suites share: payload data, git histories, kept filesystems, bit flips, users' fio job files."""
