"""The processes of a server's process group, read from /proc (Linux)."""

from __future__ import annotations

from pathlib import Path


def group_members(group: int) -> list[int]:
    """Return the pids of the group's processes that still run (zombies awaiting reaping by
    PID 1, which can lag on a loaded machine, do not count: they serve nothing, hold nothing)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        state, pgrp = fields[0], int(fields[2])
        if pgrp == group and state != "Z":
            members.append(int(stat.parent.name))
    return members
