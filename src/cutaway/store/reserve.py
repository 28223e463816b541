"""Room kept on the store's disk for the last word of an experiment that a full disk stops.

When the disk fills, every write to the store fails, the one that would mark the experiment
incomplete and release its lease included: it stayed "running", owned by a process that had
exited. So while a process runs an experiment it holds a little space on the store's
filesystem, an anonymous file (``O_TMPFILE``, or a temporary file unlinked at once) given its
blocks with ``posix_fallocate``; when the store is full, closing it frees those blocks for the
final transaction. The file has no name, so nothing is left behind even after a SIGKILL: the
kernel frees the blocks when the process's descriptor closes.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

# Finishing an experiment writes a few pages to the WAL (the experiments row and the end
# fingerprint); a megabyte leaves ample room for that and for SQLite's own bookkeeping.
RESERVE_BYTES = 1 << 20


class SpaceReserve:
    """Space held on one filesystem until released. Taking it is best effort: a filesystem
    without room (or without fallocate) simply has no reserve."""

    def __init__(self, directory: Path, size_bytes: int = RESERVE_BYTES) -> None:
        self.directory = directory
        self.size_bytes = size_bytes
        self._handle: int | None = None

    @property
    def held(self) -> bool:
        return self._handle is not None

    def take(self) -> bool:
        """Hold ``size_bytes`` on the directory's filesystem; False when it cannot."""
        if self._handle is not None:
            return True
        try:
            handle = _anonymous_file(self.directory)
        except OSError:
            return False
        try:
            os.posix_fallocate(handle, 0, self.size_bytes)
        except OSError:
            os.close(handle)
            return False
        self._handle = handle
        return True

    def release(self) -> bool:
        """Give the space back to the filesystem; True when some was held."""
        if self._handle is None:
            return False
        handle, self._handle = self._handle, None
        with contextlib.suppress(OSError):
            os.close(handle)
        return True


def _anonymous_file(directory: Path) -> int:
    """A file without a name in ``directory``: O_TMPFILE where the filesystem has it, else a
    temporary file unlinked as soon as it is made."""
    try:
        return os.open(directory, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except (OSError, AttributeError):
        import tempfile  # only here: opening a store to read it imports none of its modules

        handle, name = tempfile.mkstemp(prefix=".cutaway-reserve-", dir=directory)
        os.unlink(name)
        return handle
