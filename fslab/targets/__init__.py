"""Where a filesystem lives: a loop image, a block device, or an existing mount point."""
