"""What ``python -m benchmarks`` is built from: the sizes of its modes, CPU-time medians, the
shared workload files and the table it prints."""
