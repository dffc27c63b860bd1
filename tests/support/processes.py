"""The processes of a server's process group, read from /proc (Linux), and their Python stacks."""

from __future__ import annotations

import shutil
import subprocess
import sys
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


def python_stacks(pid: int, timeout: float = 20.0) -> str:
    """Return ``py-spy dump`` of a process's Python threads (each thread's stack, and whether
    it holds the GIL), or why there is none: what a stuck process was doing, for a failure
    message. Bounded by ``timeout`` seconds: a dump must not hang the test that failed."""
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(found).exists():
        return "no py-spy dump: py-spy is not installed (it is in the dev extra)"
    try:
        dump = subprocess.run(
            [found, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return f"no py-spy dump: py-spy took more than {timeout:.0f} s"
    if dump.returncode != 0:  # its first line says why; a Rust backtrace follows
        why = (dump.stderr.strip().splitlines() or ["?"])[0]
        return f"no py-spy dump (exit {dump.returncode}): {why}"
    return dump.stdout.strip()
