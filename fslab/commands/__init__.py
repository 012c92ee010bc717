"""One module per CLI command (or group); each defines register(app)."""
