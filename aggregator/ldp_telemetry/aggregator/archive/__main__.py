"""``python -m ldp_telemetry.aggregator.archive``: sum a report archive into a sums file (see
resum.py)."""

import sys

try:
    from ldp_telemetry.aggregator.archive.resum import main

    sys.exit(main())
except ModuleNotFoundError as error:  # dask or pyarrow: the [archive] extra
    sys.exit(
        f"python -m ldp_telemetry.aggregator.archive needs the [archive] extra ({error}): "
        "pip install 'ldp-telemetry-collector[archive]'"
    )
