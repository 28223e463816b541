"""The SQLite engine of the store: one file, opened and migrated by store/schema.py.

Every write is one ``BEGIN IMMEDIATE`` ... ``COMMIT`` transaction, so a crash or a kill never
leaves half a run, and two cutaway processes can write one database at once: WAL mode lets
readers go on while one writer holds the lock, and the 30 s busy timeout makes a second writer
wait for it instead of failing with "database is locked". While an experiment runs, a little
space is held on the file's disk (store/reserve.py).

Durability: WAL mode with ``synchronous = NORMAL`` (store/schema.py). A commit writes the
transaction to the WAL file without an fsync: a crash or a kill of cutaway keeps every committed
run (the kernel holds the data), and the file is never corrupted nor a transaction split.
A power cut or a crash of the machine itself may lose the transactions committed since the WAL
was last synced, which a checkpoint does. SQLite's own checkpoints come every 1,000 pages of WAL
(every 150 or so runs of a short command, three fsyncs each, between runs); while an experiment
runs, this engine checkpoints by time instead, at most CHECKPOINT_SECONDS after the last one (at
the next stored run), with a bound of CHECKPOINT_MAX_PAGES pages of WAL: so a power cut loses at
most the runs of the last few seconds, whatever their length, and a session of short runs does
not pay an fsync every few hundred milliseconds."""

from __future__ import annotations

import contextlib

try:
    # The C module alone, as store/schema.py opens it: the sqlite3 package around it adds the
    # datetime adapters the store never uses (importing datetime, about 3 ms of a report).
    import _sqlite3 as sqlite3
except ImportError:  # an interpreter that does not build it separately
    import sqlite3  # type: ignore[no-redef]
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from cutaway.store.engine import Connection
from cutaway.store.reserve import SpaceReserve
from cutaway.store.schema import StoreError, StoreFull, open_database

# See the module's docstring: how often, and after how much WAL, a running experiment's
# writes are checkpointed.
CHECKPOINT_SECONDS = 5.0
CHECKPOINT_MAX_PAGES = 4096  # 16 MiB of 4 KiB pages: the WAL file's size stays under it


class SqliteEngine:
    # The write lock is taken up front, so that the busy timeout, not an immediate
    # SQLITE_BUSY, handles a second writer; BEGIN IMMEDIATE holds it for the whole write.
    begin_write = "BEGIN IMMEDIATE"
    begin_read = "BEGIN"
    lock_rows = ""

    def __init__(self, path: Path, *, create: bool) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = open_database(path, create=create)
        # Held while this process runs an experiment, so that a full disk cannot keep it from
        # recording that the experiment stopped (store/reserve.py).
        self._reserve = SpaceReserve(path.parent)
        self._checkpointed_at: float | None = None  # time.monotonic(); None: SQLite's own

    @property
    def location(self) -> str:
        return str(self.path)

    def connection(self) -> Connection:
        if self._connection is None:
            raise StoreError(f"the store {self.path} is closed")
        return self._connection

    def inserted_id(self, connection: Connection, insert: str, parameters: Sequence[Any]) -> int:
        """The row's id as SQLite gives it to the connection (its rowid): a RETURNING clause
        would cost a result row and its fetch in the one write between two measured runs."""
        cursor = cast(sqlite3.Cursor, connection.execute(insert, parameters))
        return cast(int, cursor.lastrowid)

    def store_error(self, error: BaseException, doing: str) -> StoreError | None:
        if not isinstance(error, sqlite3.Error):
            return None
        if getattr(error, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_FULL:
            return StoreFull(f"{doing}: no space left on its disk ({error})")
        return StoreError(f"{doing}: {error}")

    def hold_reserve(self) -> None:
        if str(self.path) != ":memory:":
            self._reserve.take()
        self._checkpoint_by_time()

    def _checkpoint_by_time(self) -> None:
        """From now on (an experiment runs): checkpoints by time, see the module."""
        if self._connection is None or self._checkpointed_at is not None:
            return
        self._connection.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_MAX_PAGES:d}")
        self._checkpointed_at = time.monotonic()

    def run_stored(self) -> None:
        """After a run's transaction: the checkpoint, once CHECKPOINT_SECONDS have passed."""
        if self._connection is None or self._checkpointed_at is None:
            return
        now = time.monotonic()
        if now - self._checkpointed_at < CHECKPOINT_SECONDS:
            return
        self._checkpointed_at = now
        # PASSIVE: never waits for a reader; what it cannot copy now, a later one does. A
        # failure loses nothing: the run is committed, the next checkpoint syncs it.
        with contextlib.suppress(sqlite3.Error):
            self._connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def release_reserve(self) -> bool:
        return self._reserve.release()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self._reserve.release()

    def __del__(self) -> None:
        # An sqlite3 connection is in a reference cycle with its statement cache: dropped
        # unclosed, it would stay open (its WAL not checkpointed, its -wal and -shm files
        # left) until the cyclic collector runs, which a process that ends at once
        # (cli/main.py) never waits for. Closed with its engine instead.
        with contextlib.suppress(Exception):  # at the interpreter's exit, whatever is left
            self.close()
