"""``python -m aggregator.batch``: sum a report archive into a sums file (see job.py)."""

import sys

try:
    from aggregator.batch.job import main

    sys.exit(main())
except ModuleNotFoundError as error:  # dask or pyarrow: the [batch] extra
    sys.exit(
        f"python -m aggregator.batch needs the [batch] extra ({error}): "
        "pip install 'ldp-telemetry[server,batch]'"
    )
