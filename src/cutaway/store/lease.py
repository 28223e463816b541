"""Who runs an experiment: the lease that keeps two cutaway processes from running (or
resuming) the same experiment at once.

The lease lives in the store's schema (``experiments.owner_*`` and ``heartbeat_at``), not in a
lock file, so it holds for any store several machines share. On the owner's own host a lease is
live while its process runs: a pid and that process's start time name one process (a reused pid
has another start time). From another host the process cannot be seen, so the lease is live
while its heartbeat, renewed by the stored runs (at most every store.db.HEARTBEAT_SECONDS), is
younger than FOREIGN_LEASE_SECONDS."""

from __future__ import annotations

import os
import socket

from cutaway.processes import process_start_time
from cutaway.value_class import value_class

# Generous: a single run may take minutes, and a lease taken over early would let two
# processes write one experiment.
FOREIGN_LEASE_SECONDS = 600.0


@value_class
class Owner:
    """The process that runs an experiment."""

    host: str
    pid: int
    started: int | None  # process start time, clock ticks since boot (see processes.py)

    @classmethod
    def current(cls) -> Owner:
        pid = os.getpid()
        return cls(socket.gethostname(), pid, process_start_time(pid))

    def alive(self, heartbeat_at: float | None, now: float) -> bool:
        """Whether this owner may still be running the experiment."""
        if self.host == socket.gethostname():
            started = process_start_time(self.pid)
            return started is not None and started == self.started
        return heartbeat_at is not None and now - heartbeat_at < FOREIGN_LEASE_SECONDS

    def describe(self, heartbeat_at: float | None, now: float) -> str:
        heard = "" if heartbeat_at is None else f", last heard {now - heartbeat_at:.0f} s ago"
        return f"process {self.pid} on host {self.host}{heard}"


def owner_from_row(host: object, pid: object, started: object) -> Owner | None:
    """The owner stored in an experiment's row, None when it has none (finished, or written by
    a cutaway before leases) or the row does not hold one that makes sense."""
    if not isinstance(host, str) or not isinstance(pid, int):
        return None
    return Owner(host, pid, started if isinstance(started, int) else None)
