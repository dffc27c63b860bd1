"""The batch path: reports archived to Parquet (archive) and re-summed on Dask (job).

``python -m aggregator.batch ARCHIVE --task TASK --output sums.parquet`` runs the job.
Importing this package loads neither Flask nor Dask.
"""
