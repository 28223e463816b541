"""Facts about processes on this machine, from /proc: enough to tell a live process from a pid
that was reused. No other cutaway module is imported here."""

from __future__ import annotations

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
