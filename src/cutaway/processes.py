"""Facts about processes on this machine, from /proc: enough to tell a live process from a pid
that was reused, and so to remove the temporary directories of a cutaway process that is gone.
No other cutaway module is imported here."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path


def process_start_time(pid: int) -> int | None:
    """When a process started, in clock ticks since boot (/proc/PID/stat field 22), None when
    no process has that pid. A pid and its start time name one process for as long as the
    machine runs: a reused pid has another start time."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    # The command name (field 2) may hold spaces and parentheses: count after its last ")".
    try:
        return int(stat[stat.rindex(")") + 2 :].split()[19])
    except (ValueError, IndexError):
        return None


def owned_directory(prefix: str, parent: str | None = None) -> Path:
    """A new private temporary directory (in ``parent``, else the system's temporary
    directory) whose name says which process owns it: ``PREFIX-PID-START-random``. The
    directories of that prefix whose owner no longer runs (killed with SIGKILL, so no cleanup
    ran) are removed first: nothing another live process uses, and nothing left for ever."""
    import tempfile  # for the probes that need a directory: not every `cutaway run`

    where = Path(parent or tempfile.gettempdir())
    remove_stale_directories(where, prefix)
    pid = os.getpid()
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{pid}-{process_start_time(pid)}-", dir=where))


def remove_stale_directories(parent: Path, prefix: str) -> list[Path]:
    """Remove the directories ``PREFIX-PID-START-*`` in ``parent`` whose owner no longer runs:
    no process has its pid, or the one that has it started at another time (the pid was
    reused). Other names (made by older versions, or by anything else) are left alone."""
    owner_pattern = re.compile(re.escape(prefix) + r"(?P<pid>\d+)-(?P<start>\d+)-[^/]*")
    removed: list[Path] = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        owner = owner_pattern.fullmatch(entry.name)
        if owner is None or process_start_time(int(owner["pid"])) == int(owner["start"]):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed
