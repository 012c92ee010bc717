"""Host plumbing: external commands and their deadlines, /proc and /sys readers, resources to tear down, forked work."""
