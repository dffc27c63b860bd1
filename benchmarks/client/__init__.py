"""The SDK on the caller's thread: ``record()`` latency."""
