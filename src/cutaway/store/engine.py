"""The seam between the store and its database engine: SQLite (store/sqlite.py, the embedded
default) or PostgreSQL (store/postgresql.py, the team store).

:class:`~cutaway.store.db.Store` writes its SQL once, with ``?`` placeholders, in the dialect
both engines share (``INSERT ... ON CONFLICT``); an engine supplies the connection, how
transactions begin, what locks a row for the rest of a write transaction, how an insert's new id
is read, the translation of its errors into StoreError, and the space reserve that only a file
needs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from cutaway.store.schema import StoreError


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """What the store asks of a connection: sqlite3's, or psycopg's behind an adapter."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> object: ...

    @property
    def in_transaction(self) -> bool: ...


class Engine(Protocol):
    """One open store's database. ``location`` names it in messages: a path, or a URL whose
    password is hidden."""

    @property
    def location(self) -> str: ...

    # How a write transaction begins: it must keep a second writer from changing what this
    # one read (SQLite: BEGIN IMMEDIATE; PostgreSQL: row locks, see lock_rows).
    begin_write: str
    # How a read transaction begins: every query in it sees one snapshot.
    begin_read: str
    # Appended to a SELECT in a write transaction whose rows the transaction then changes
    # according to what it read (claiming an experiment's lease).
    lock_rows: str

    def connection(self) -> Connection:
        """The open connection; StoreError once closed."""
        ...

    def inserted_id(self, connection: Connection, insert: str, parameters: Sequence[Any]) -> int:
        """Run ``insert``, an INSERT of one row into a table keyed by an ``id`` column, written
        without RETURNING, and return the id the row was given."""
        ...

    def store_error(self, error: BaseException, doing: str) -> StoreError | None:
        """The StoreError for an engine's error while ``doing`` (e.g. "cannot store run ...
        in LOCATION"), None for an error that is not the engine's."""
        ...

    def hold_reserve(self) -> None:
        """Keep room on the store's disk for recording how a running experiment ends (an
        experiment runs from now on)."""
        ...

    def run_stored(self) -> None:
        """Called after each run's transaction committed: whatever the engine does between
        runs to bound what a power cut may lose (SQLite: a checkpoint every few seconds)."""
        ...

    def release_reserve(self) -> bool:
        """Give that room back; True when some was held."""
        ...

    def close(self) -> None: ...
