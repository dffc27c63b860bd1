"""Print the declared minimum version of every runtime dependency and of the collector's
extras ([server], [parquet], [postgres], [batch]).

`make test-min-versions` installs exactly these and runs the SDK and collector tests, so
the floors in pyproject.toml are proven, not hoped for.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

EXTRAS = ("server", "parquet", "postgres", "batch")  # what the collector's tests import
FLOOR = re.compile(r"^([A-Za-z0-9_.\-\[\]]+)\s*>=\s*([0-9][^,;\s]*)")


def pins(pyproject: Path) -> list[str]:
    """Return 'name==floor' for the runtime dependencies and the collector's extras."""
    project = tomllib.loads(pyproject.read_text())["project"]
    extras = project["optional-dependencies"]
    declared = project["dependencies"] + [
        requirement for extra in EXTRAS for requirement in extras[extra]
    ]
    out = []
    for requirement in dict.fromkeys(declared):  # an extra may repeat another's requirement
        match = FLOOR.match(requirement)
        if not match:
            sys.exit(f"{requirement!r} has no '>=' floor: every dependency declares one")
        out.append(f"{match.group(1)}=={match.group(2)}")
    return out


if __name__ == "__main__":
    print("\n".join(pins(Path(__file__).resolve().parent.parent / "pyproject.toml")))
