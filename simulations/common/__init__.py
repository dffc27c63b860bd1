"""What every experiment is built from: run settings, populations, exact samplers of sums,
closed forms beyond ldp_telemetry.shared.accuracy, error summaries, plots and tables."""
