"""Print the declared minimum version of every runtime dependency of the SDK and of the
collector (aggregator/pyproject.toml) with its extras ([parquet], [postgres], [archive]).

`make test-min-versions` installs exactly these and runs the SDK and collector tests, so
the floors in pyproject.toml are proven, not hoped for.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

EXTRAS = ("parquet", "postgres", "archive")  # what the collector's tests import
FLOOR = re.compile(r"^([A-Za-z0-9_.\-\[\]]+)\s*>=\s*([0-9][^,;\s]*)")


def declared(root: Path) -> list[str]:
    """Return the SDK's and the collector's requirements (with its extras), ours left out."""
    sdk = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    collector = tomllib.loads((root / "aggregator" / "pyproject.toml").read_text())["project"]
    extras = collector["optional-dependencies"]
    every = sdk["dependencies"] + collector["dependencies"]
    every += [requirement for extra in EXTRAS for requirement in extras[extra]]
    ours = sdk["name"]
    # an extra may repeat another's requirement
    return [r for r in dict.fromkeys(every) if not r.startswith(ours + "==")]


def pins(root: Path) -> list[str]:
    """Return 'name==floor' for the runtime dependencies and the collector's extras."""
    out = []
    for requirement in declared(root):
        match = FLOOR.match(requirement)
        if not match:
            sys.exit(f"{requirement!r} has no '>=' floor: every dependency declares one")
        out.append(f"{match.group(1)}=={match.group(2)}")
    return out


if __name__ == "__main__":
    print("\n".join(pins(Path(__file__).resolve().parent.parent)))
