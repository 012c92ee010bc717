"""Host plumbing: external commands, /proc and /sys readers, resources to tear down, forked work."""
