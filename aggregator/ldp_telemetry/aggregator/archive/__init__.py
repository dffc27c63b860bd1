"""The report archive: reports kept as Parquet (parquet) and re-summed on Dask (resum).

``python -m ldp_telemetry.aggregator.archive ARCHIVE --task TASK --output sums.parquet``
runs the job. Importing this package loads neither Flask nor Dask.
"""
