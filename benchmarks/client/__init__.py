"""The SDK on the caller's thread (`record()` latency) and its on-disk queue shared by processes."""
