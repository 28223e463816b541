"""The SQLite engine of the store: one file, opened and migrated by store/schema.py.

Every write is one ``BEGIN IMMEDIATE`` ... ``COMMIT`` transaction, so a crash or a kill never
leaves half a run, and two cutaway processes can write one database at once: WAL mode lets
readers go on while one writer holds the lock, and the 30 s busy timeout makes a second writer
wait for it instead of failing with "database is locked". While an experiment runs, a little
space is held on the file's disk (store/reserve.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from cutaway.store.engine import Connection
from cutaway.store.reserve import SpaceReserve
from cutaway.store.schema import StoreError, StoreFull, open_database


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

    @property
    def location(self) -> str:
        return str(self.path)

    def connection(self) -> Connection:
        if self._connection is None:
            raise StoreError(f"the store {self.path} is closed")
        return self._connection

    def store_error(self, error: BaseException, doing: str) -> StoreError | None:
        if not isinstance(error, sqlite3.Error):
            return None
        if getattr(error, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_FULL:
            return StoreFull(f"{doing}: no space left on its disk ({error})")
        return StoreError(f"{doing}: {error}")

    def hold_reserve(self) -> None:
        if str(self.path) != ":memory:":
            self._reserve.take()

    def release_reserve(self) -> bool:
        return self._reserve.release()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self._reserve.release()
