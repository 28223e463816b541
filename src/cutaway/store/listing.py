"""The experiments of a store, one row each, as `cutaway list` prints them: read with one query
and nothing imported but sqlite3, so that the command starts at once.

:func:`read_listing` reads only a store this cutaway can read as it is (its schema at
:data:`~cutaway.store.schema.LATEST_VERSION`) and answers None for anything else (no file, an
older or newer schema, any SQLite error); the caller then opens it as a :class:`Store`, which
migrates it or says what is wrong. Reading takes no write lock, so listing never waits for an
experiment being written."""

from __future__ import annotations

import os
import stat

try:
    # The C module alone: the sqlite3 package around it adds the datetime adapters (importing
    # datetime, about 2 ms, a tenth of `cutaway list`), which the store never uses: it keeps
    # times as Unix seconds. Same classes, same exceptions (sqlite3.dbapi2 re-exports them).
    import _sqlite3 as sqlite3
except ImportError:  # an interpreter that does not build it separately
    import sqlite3  # type: ignore[no-redef]

from cutaway.store.schema import (
    BUSY_TIMEOUT_SECONDS,
    EXPERIMENT_STATUSES,
    LATEST_VERSION,
    read_schema_version,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which costs start-up time
if TYPE_CHECKING:
    from cutaway.store.engine import Connection

# (id, name, status, created_at, label, variants, runs), newest first; n_runs counts every
# stored run, warmup and failed ones included.
LISTING_QUERY = (
    "SELECT e.id, e.name, e.status, e.created_at, e.label,"
    " (SELECT COUNT(*) FROM variants v WHERE v.experiment_id = e.id),"
    " (SELECT COUNT(*) FROM runs r WHERE r.experiment_id = e.id)"
    " FROM experiments e ORDER BY e.id DESC"
)

_LATEST_INSTANT = 253_402_300_799.0  # store.checks.LATEST_INSTANT: the end of the year 9999

ListingRow = tuple[int, str, str, float, "str | None", int, int]


def listing_rows(connection: Connection | sqlite3.Connection) -> list[ListingRow]:
    rows: list[ListingRow] = connection.execute(LISTING_QUERY).fetchall()
    return rows


def read_listing(path: str | os.PathLike[str]) -> list[ListingRow] | None:
    """The listing of the store at ``path``, or None when it must be opened as a Store."""
    location = os.fspath(path)
    if location.startswith("//") or not os.path.isfile(location):
        # "//" would start a URI's authority; Store says what a missing file is, and opens a
        # postgresql:// URL (which is no file)
        return None
    if not _companions_are_files(location):
        return None  # Store refuses it, naming the file (output_files.store_path_problem)
    try:
        # mode=rw: never create a file (isfile above may be stale); a write-protected file is
        # opened read-only by SQLite itself, and reading a WAL store needs no write.
        connection = sqlite3.connect(
            f"{_file_uri(location)}?mode=rw",
            uri=True,
            timeout=BUSY_TIMEOUT_SECONDS,
            isolation_level=None,
        )
    except sqlite3.Error:
        return None
    try:
        if read_schema_version(connection) != LATEST_VERSION:
            return None
        rows = listing_rows(connection)
        # A row SQLite let through with a wrong type (a hand-edited store): Store reads it,
        # names the experiment and the column, and lists the others.
        return rows if all(_well_typed(row) for row in rows) else None
    except sqlite3.Error:
        return None
    finally:
        connection.close()


# The files SQLite keeps beside a store (output_files.STORE_COMPANIONS, not imported here: it
# costs `cutaway list` its start-up time).
_COMPANIONS = ("-journal", "-wal", "-shm")


def _companions_are_files(location: str) -> bool:
    """Whether each file SQLite may open beside the store is a regular file or nothing. SQLite
    opens a ``-journal`` it finds to read its header: a FIFO of that name kept `cutaway list`
    waiting for a writer for ever."""
    for suffix in _COMPANIONS:
        try:
            mode = os.stat(location + suffix).st_mode
        except OSError:
            continue
        if not stat.S_ISREG(mode):
            return False
    return True


def _well_typed(row: ListingRow) -> bool:
    _, name, status, created_at, label, _, _ = row
    return (
        isinstance(name, str)
        and status in EXPERIMENT_STATUSES
        and isinstance(created_at, int | float)
        and not isinstance(created_at, bool)
        and 0 <= created_at <= _LATEST_INSTANT  # not NaN, a time (store/checks.py)
        and (label is None or isinstance(label, str))
    )


def _file_uri(path: str) -> str:
    """An SQLite ``file:`` URI of ``path``: SQLite decodes %HH escapes in it and ends the path
    at ``?`` or ``#``, so those three characters are escaped (https://sqlite.org/uri.html)."""
    escaped = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file:{escaped}"
