"""The store's schema, the migrations that build it, and how an SQLite database is opened.

One list of migrations builds both engines, SQLite (the embedded default) and PostgreSQL (the
team store, store/postgresql.py), with the same version numbers. A statement is written once, in
SQLite's DDL, and store/postgresql.py translates its column types (INTEGER PRIMARY KEY, INTEGER,
REAL, BLOB, WITHOUT ROWID); only where the engines really differ (rebuilding a table) does a
migration give each engine its own text, as :class:`PerEngine`. A test builds a store on each
engine and checks that both have the same tables and columns.

The schema version is kept in ``PRAGMA user_version`` in SQLite (0 in a new, empty database) and
in the one-row table ``cutaway_schema`` in PostgreSQL. Opening a database runs, in one
transaction, every migration whose version is above the stored one, and refuses (without
changing the database) one whose version is newer than this code knows.

Version history:

- 1 (2026-11-22): ``experiments``, ``variants`` (the expanded variants, in spec order),
  ``runs``, ``measurements`` and ``calibrations``. Measurements are in long format, one row per
  run and metric, so a new probe adds metrics without migrating ``runs``.
- 2 (2026-11-22): ``run_data``, what a probe recorded during one run (per-call latencies, for
  example) as opaque blobs keyed by kind and key, written in the run's own transaction; and
  ``probes``, each probe of an experiment with its backend and its measured overhead.
- 3 (2026-11-22): ``run_data`` becomes a rowid table with a unique index on (run_id, kind,
  key). In the WITHOUT ROWID table the blobs lived in the primary key's b-tree, and SQLite
  reads a key's whole overflowing payload to compare it while searching: every lookup that
  passed a run's calls blob read all of it (tens of megabytes for ten million calls).
- 4 (2026-11-22): ``probes.process_overhead_seconds``, what a probe adds to each process it
  enters (loading a library, starting a tracer), measured; NULL where unknown.
- 5 (2026-11-24): ``experiments.owner_host``, ``owner_pid``, ``owner_started`` and
  ``heartbeat_at``: the lease of the process running an experiment (store/lease.py), so that
  ``--resume`` never takes over an experiment another process is still running.
- 6 (2026-11-24): ``runs.leftover_processes`` and ``runs.leftover_names`` (a JSON array of
  strings): what a run left running after it ended, and those processes' names.
- 7 (2026-11-24): ``runs.purpose``: ``'timed'`` for the runs the comparisons use (every run
  stored before), or the name of the probe that needs runs of its own, untimed (``'profile'``:
  a sampling profiler perturbs timing). The unique key becomes (experiment_id, variant,
  round_index, purpose), so ``runs`` is rebuilt (SQLite cannot change a table's constraints),
  with foreign keys off during the rebuild so that dropping the old table cascades nowhere.
- 8 (2026-11-24): ``triage``, a state (``'confirmed'``, ``'false alarm'``, ``'accepted'``) and
  a note per change that `cutaway history` flagged, keyed by the experiment name and the
  change's id (the ids of the experiments on either side of the step, e.g. ``'12-13'``).
  ``variants.version``: the variant's own version (``version``, ``version_from`` or
  ``version_command`` in the experiment file, ``--variant-version``), NULL for a variant
  without one (its version is the experiment's label).

To change the schema, append a :class:`Migration` to :data:`MIGRATIONS` (never edit one that
has been released: databases out there already ran it) and add a dated line above. Write its
statements once, in SQLite's DDL (a new column is one ``ALTER TABLE ... ADD COLUMN`` line that
both engines run); give a :class:`PerEngine` only where the engines cannot share the text.

Its length: every migration since the first stays here, as the stores it built still need it.
"""

from __future__ import annotations

import os

try:
    # The C module alone: the sqlite3 package around it adds the datetime adapters (importing
    # datetime, about 2 ms, a tenth of `cutaway list`), which the store never uses: it keeps
    # times as Unix seconds. Same classes, same exceptions (sqlite3.dbapi2 re-exports them).
    import _sqlite3 as sqlite3
except ImportError:  # an interpreter that does not build it separately
    import sqlite3  # type: ignore[no-redef]
import time

# Nothing else is imported: `cutaway list` reads a store through this module
# (store/listing.py) and must start at once (tests/unit/test_startup_imports.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


# The statuses an experiment row may hold (the checked readers, store/rows.py, and the fast
# listing, store/listing.py, both read them from here).
EXPERIMENT_STATUSES = ("running", "complete", "incomplete")


class StoreError(Exception):
    """The store cannot do what was asked; the message says why, in words for the user."""


class BadStoreUrl(StoreError):
    """A ``postgresql://`` URL that libpq cannot read: bad input, nothing was done."""


class BadStorePath(StoreError):
    """A store path that is no store file (a device, a FIFO, a directory): bad input, and
    nothing was created beside it."""


class StoreFull(StoreError):
    """A write failed because the store's disk (or SQLite's size limit) is full."""


class PerEngine:
    """Statements that differ between the engines: the text each one runs, in order, in place
    of one shared statement."""

    __slots__ = ("postgresql", "sqlite")

    def __init__(self, *, sqlite: tuple[str, ...], postgresql: tuple[str, ...]) -> None:
        self.sqlite = sqlite
        self.postgresql = postgresql


class Migration:
    """The statements that take a database from ``version - 1`` to ``version``: each one
    shared by both engines (SQLite's DDL, translated for PostgreSQL) or a :class:`PerEngine`.
    (A plain class, not a dataclass: importing dataclasses costs `cutaway list` half its
    start-up.)

    ``rebuilds``: the migration rebuilds a table other tables refer to, so SQLite's foreign keys
    must be off while it runs (SQLite's "making other kinds of table schema changes"
    procedure), and are checked before commit."""

    __slots__ = ("date", "rebuilds", "statements", "version")

    def __init__(
        self,
        version: int,
        date: str,
        statements: tuple[str | PerEngine, ...],
        rebuilds: bool = False,
    ) -> None:
        self.version = version
        self.date = date  # ISO date the migration was released, as in the version history
        self.statements = statements
        self.rebuilds = rebuilds

    def sqlite_statements(self) -> list[str]:
        """What SQLite runs for this migration."""
        found: list[str] = []
        for statement in self.statements:
            found.extend(statement.sqlite if isinstance(statement, PerEngine) else (statement,))
        return found


_VERSION_1 = Migration(
    version=1,
    date="2026-11-22",
    statements=(
        """
        CREATE TABLE experiments (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('running', 'complete', 'incomplete')),
            created_at REAL NOT NULL,
            finished_at REAL,
            label TEXT,
            spec_json TEXT NOT NULL,          -- Spec.to_dict()
            spec_text TEXT,                   -- the file exactly as given; NULL in quick mode
            spec_path TEXT,
            environment_json TEXT NOT NULL,   -- fingerprint at start
            environment_end_json TEXT,        -- fingerprint at the end; NULL until finished
            cutaway_version TEXT NOT NULL
        )
        """,
        "CREATE INDEX experiments_by_name ON experiments (name)",
        """
        CREATE TABLE variants (
            experiment_id INTEGER NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
            position INTEGER NOT NULL,        -- 0-based, in spec order
            name TEXT NOT NULL,
            spec_json TEXT NOT NULL,          -- Variant.to_dict()
            PRIMARY KEY (experiment_id, position),
            UNIQUE (experiment_id, name)
        ) WITHOUT ROWID
        """,
        # The foreign key to variants makes a run of an unknown variant impossible.
        """
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            experiment_id INTEGER NOT NULL,
            variant TEXT NOT NULL,
            round_index INTEGER NOT NULL,     -- warmup rounds are negative
            order_in_round INTEGER NOT NULL,
            status TEXT NOT NULL
                CHECK (status IN ('ok', 'failed', 'timeout', 'interrupted', 'error')),
            exit_code INTEGER,
            signal INTEGER,
            started_at REAL NOT NULL,
            message TEXT NOT NULL DEFAULT '',
            UNIQUE (experiment_id, variant, round_index),
            FOREIGN KEY (experiment_id, variant)
                REFERENCES variants (experiment_id, name) ON DELETE CASCADE
        )
        """,
        # Loading one experiment's runs in order reads this index alone.
        "CREATE INDEX runs_in_order ON runs (experiment_id, round_index, order_in_round)",
        # NOT NULL also rejects NaN, which SQLite stores as NULL.
        """
        CREATE TABLE measurements (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            metric TEXT NOT NULL,
            value REAL NOT NULL,
            PRIMARY KEY (run_id, metric)
        ) WITHOUT ROWID
        """,
        """
        CREATE TABLE calibrations (
            experiment_id INTEGER PRIMARY KEY REFERENCES experiments (id) ON DELETE CASCADE,
            command TEXT NOT NULL,
            n INTEGER NOT NULL,
            median_wall_seconds REAL NOT NULL,
            min_wall_seconds REAL NOT NULL
        )
        """,
    ),
)

_VERSION_2 = Migration(
    version=2,
    date="2026-11-22",
    statements=(
        # A probe's records for one run, one row per (kind, key), e.g. ("calls", "getpwnam"):
        # a numpy array's bytes, decoded by the probe that wrote it. Blobs, not rows, because
        # a run can make millions of calls and loading them must be one read, not a loop.
        """
        CREATE TABLE run_data (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            key TEXT NOT NULL,
            count INTEGER NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY (run_id, kind, key)
        ) WITHOUT ROWID
        """,
        """
        CREATE TABLE probes (
            experiment_id INTEGER NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            description TEXT NOT NULL,        -- the backend, as the probe's check() said
            overhead_seconds REAL,            -- per recorded event, measured; NULL if unknown
            PRIMARY KEY (experiment_id, name)
        ) WITHOUT ROWID
        """,
    ),
)

_VERSION_3 = Migration(
    version=3,
    date="2026-11-22",
    statements=(
        # Searches compare integer rowids in the table and (run_id, kind, key) in the index;
        # neither holds a blob, so a lookup reads a blob only when it selects the data column.
        """
        CREATE TABLE run_data_v3 (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            key TEXT NOT NULL,
            count INTEGER NOT NULL,
            data BLOB NOT NULL,
            UNIQUE (run_id, kind, key)
        )
        """,
        "INSERT INTO run_data_v3 (run_id, kind, key, count, data)"
        " SELECT run_id, kind, key, count, data FROM run_data ORDER BY run_id, kind, key",
        "DROP TABLE run_data",
        "ALTER TABLE run_data_v3 RENAME TO run_data",
    ),
)

_VERSION_4 = Migration(
    version=4,
    date="2026-11-22",
    statements=(
        # Seconds a probe adds to each process it enters, measured; NULL if unknown.
        "ALTER TABLE probes ADD COLUMN process_overhead_seconds REAL",
    ),
)

_VERSION_5 = Migration(
    version=5,
    date="2026-11-24",
    statements=(
        # The lease (store/lease.py): the process running the experiment, NULL when none does.
        "ALTER TABLE experiments ADD COLUMN owner_host TEXT",
        "ALTER TABLE experiments ADD COLUMN owner_pid INTEGER",
        "ALTER TABLE experiments ADD COLUMN owner_started INTEGER",  # clock ticks since boot
        "ALTER TABLE experiments ADD COLUMN heartbeat_at REAL",  # Unix time of the last run
    ),
)

_VERSION_6 = Migration(
    version=6,
    date="2026-11-24",
    statements=(
        # Runs stored before version 6 were not checked: 0 and no names.
        "ALTER TABLE runs ADD COLUMN leftover_processes INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE runs ADD COLUMN leftover_names TEXT NOT NULL DEFAULT '[]'",
    ),
)

_VERSION_7 = Migration(
    version=7,
    date="2026-11-24",
    statements=(
        # SQLite cannot change a table's constraints: it rebuilds the table. PostgreSQL can,
        # and must: dropping the old table would drop the foreign keys that refer to it.
        PerEngine(
            sqlite=(
                """
        CREATE TABLE runs_v7 (
            id INTEGER PRIMARY KEY,
            experiment_id INTEGER NOT NULL,
            variant TEXT NOT NULL,
            round_index INTEGER NOT NULL,     -- warmup rounds are negative
            order_in_round INTEGER NOT NULL,
            status TEXT NOT NULL
                CHECK (status IN ('ok', 'failed', 'timeout', 'interrupted', 'error')),
            exit_code INTEGER,
            signal INTEGER,
            started_at REAL NOT NULL,
            message TEXT NOT NULL DEFAULT '',
            leftover_processes INTEGER NOT NULL DEFAULT 0,
            leftover_names TEXT NOT NULL DEFAULT '[]',
            purpose TEXT NOT NULL DEFAULT 'timed',  -- 'timed', or the probe the run is for
            UNIQUE (experiment_id, variant, round_index, purpose),
            FOREIGN KEY (experiment_id, variant)
                REFERENCES variants (experiment_id, name) ON DELETE CASCADE
        )
        """,
                "INSERT INTO runs_v7 (id, experiment_id, variant, round_index, order_in_round,"
                " status, exit_code, signal, started_at, message, leftover_processes,"
                " leftover_names) SELECT id, experiment_id, variant, round_index, order_in_round,"
                " status, exit_code, signal, started_at, message, leftover_processes,"
                " leftover_names FROM runs",
                "DROP TABLE runs",
                "ALTER TABLE runs_v7 RENAME TO runs",
                "CREATE INDEX runs_in_order ON runs (experiment_id, round_index, order_in_round)",
            ),
            postgresql=(
                "ALTER TABLE runs ADD COLUMN purpose TEXT NOT NULL DEFAULT 'timed'",
                "ALTER TABLE runs DROP CONSTRAINT runs_experiment_id_variant_round_index_key",
                "ALTER TABLE runs ADD CONSTRAINT runs_experiment_id_variant_round_index_purpose_key"
                " UNIQUE (experiment_id, variant, round_index, purpose)",
            ),
        ),
    ),
    rebuilds=True,
)

_VERSION_8 = Migration(
    version=8,
    date="2026-11-24",
    statements=(
        # Not tied to an experiment row: a change lies between two experiments, and its
        # triage outlives either being deleted.
        """
        CREATE TABLE triage (
            name TEXT NOT NULL,               -- the experiment name whose history flagged it
            change_id TEXT NOT NULL,          -- '<experiment id before>-<experiment id after>'
            state TEXT NOT NULL CHECK (state IN ('confirmed', 'false alarm', 'accepted')),
            note TEXT NOT NULL DEFAULT '',
            at REAL NOT NULL,                 -- Unix time of the last change of state
            PRIMARY KEY (name, change_id)
        ) WITHOUT ROWID
        """,
        # NULL for a variant without a version of its own: the experiment's label is its version.
        "ALTER TABLE variants ADD COLUMN version TEXT",
    ),
)

# Applied in order; MIGRATIONS[i] takes a database from version i to version i + 1.
MIGRATIONS: tuple[Migration, ...] = (
    _VERSION_1,
    _VERSION_2,
    _VERSION_3,
    _VERSION_4,
    _VERSION_5,
    _VERSION_6,
    _VERSION_7,
    _VERSION_8,
)
LATEST_VERSION: int = len(MIGRATIONS)
BUSY_TIMEOUT_SECONDS = 30.0


def read_schema_version(connection: sqlite3.Connection) -> int:
    row = connection.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def refuse_newer_schema(version: int, path: Path | str) -> None:
    """Raise when the database (``path``: a file, or the URL as shown) was written by a newer
    cutaway than this one, or holds a version no cutaway writes (below 0: the migrations from
    the end of the list would have run)."""
    if version < 0:
        raise StoreError(
            f"{path} has store schema version {version} (PRAGMA user_version), which no cutaway "
            "writes: the store was edited by hand or corrupted (the database was not changed)"
        )
    if version > LATEST_VERSION:
        raise StoreError(
            f"{path} has store schema version {version}, but this cutaway only knows versions "
            f"up to {LATEST_VERSION}; upgrade cutaway to use it (the database was not changed)"
        )


def migrate(connection: sqlite3.Connection, path: Path) -> None:
    """Bring the database to LATEST_VERSION in one write transaction.

    The version is read again under the write lock, so two processes opening a new database at
    the same time apply each migration once. ``connection`` must be in autocommit mode
    (``isolation_level=None``) so that this function controls the transaction.

    A migration that rebuilds a table turns foreign keys off for the transaction (the pragma
    is a no-op inside one, so it is set before BEGIN) and checks them all before committing."""
    rebuilding = any(m.rebuilds for m in MIGRATIONS[read_schema_version(connection) :])
    if rebuilding:
        connection.execute("PRAGMA foreign_keys = OFF")
    try:
        _migrate_in_transaction(connection, path)
    finally:
        if rebuilding:
            connection.execute("PRAGMA foreign_keys = ON")


def _migrate_in_transaction(connection: sqlite3.Connection, path: Path) -> None:
    connection.execute("BEGIN IMMEDIATE")
    try:
        version = read_schema_version(connection)
        refuse_newer_schema(version, path)
        _refuse_unversioned_tables(connection, version, path)
        for migration in MIGRATIONS[version:]:
            for statement in migration.sqlite_statements():
                connection.execute(statement)
        if any(m.rebuilds for m in MIGRATIONS[version:]):
            broken = connection.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise StoreError(f"{path}: migration broke foreign keys: {broken[:5]}")
        if version < LATEST_VERSION:
            # PRAGMA takes no parameters; LATEST_VERSION is an int of ours, not user input.
            connection.execute(f"PRAGMA user_version = {LATEST_VERSION:d}")
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


def _refuse_unversioned_tables(connection: sqlite3.Connection, version: int, path: Path) -> None:
    """Version 0 is a new, empty database: one that already holds cutaway's tables had its
    version reset, and creating them again would fail half-way with an SQLite error."""
    if version != 0:
        return
    row = connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'experiments'"
    ).fetchone()
    if row is not None:
        raise StoreError(
            f"{path} has store schema version 0 (PRAGMA user_version) but holds cutaway's "
            "tables: the version was reset by hand or the file is corrupted (the database was "
            "not changed)"
        )


def open_database(path: Path, *, create: bool = True) -> sqlite3.Connection:
    """Open (creating it if needed) and migrate the database at ``path``, configured for
    several processes writing at once.

    With ``create`` false (the reading commands: report, list, export, compare) a missing file
    is an error rather than a new empty store, and a store that cannot be written (a read-only
    file or mount) is opened read-only: ``mode=ro``, or ``immutable=1`` where even the WAL's
    shared-memory file cannot be made. Such a store is read as it is, never migrated.

    A path that is no regular file (``--db /dev/null``) is refused before SQLite opens it:
    SQLite would write its journal beside it."""
    if str(path) != ":memory:":
        _refuse_special(path)
    if not create:
        if str(path) == ":memory:" or not path.is_file():
            raise StoreError(
                f"no store at {path} (reading commands never create one; "
                "`cutaway run` makes it, --db or CUTAWAY_DB names another)"
            )
        return _open_existing(path)
    try:
        if str(path) != ":memory:":
            path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: we issue BEGIN and COMMIT ourselves, the module issues none.
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"cannot open the store {path}: {exc}") from exc
    return _configured(connection, path)


def _refuse_special(path: Path) -> None:
    from cutaway.output_files import store_path_problem

    problem = store_path_problem(str(path))
    if problem is not None:
        raise BadStorePath(
            f"the store {str(path)!r}: {problem}; a store is an SQLite file or a new path "
            "(nothing was created)"
        )


def _configured(connection: sqlite3.Connection, path: Path) -> sqlite3.Connection:
    try:
        connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000):d}")
        connection.execute("PRAGMA foreign_keys = ON")
        # Before anything writes: a newer cutaway's database must be left exactly as it is.
        # The version and the tables read in one transaction, so from one snapshot: read
        # apart, another process creating the store could commit its tables and version
        # between the two reads, and its new store would look like one whose version was reset.
        connection.execute("BEGIN")
        try:
            version = read_schema_version(connection)
            refuse_newer_schema(version, path)
            _refuse_unversioned_tables(connection, version, path)
        finally:
            connection.execute("COMMIT")
        _enable_wal(connection)
        # In WAL mode NORMAL still never corrupts nor splits a transaction; it only skips the
        # fsync per commit, which would otherwise happen between measured runs.
        connection.execute("PRAGMA synchronous = NORMAL")
        migrate(connection, path)
    except BaseException as exc:
        connection.close()
        if isinstance(exc, sqlite3.Error):
            raise StoreError(f"cannot open the store {path}: {exc}") from exc
        raise
    return connection


def _open_existing(path: Path) -> sqlite3.Connection:
    """An existing store: for writing when the file allows it, else read-only as it is."""
    uri = path.resolve().as_uri()
    try:
        connection = sqlite3.connect(
            f"{uri}?mode=rw", uri=True, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None
        )
        return _configured(connection, path)
    except (sqlite3.Error, StoreError) as error:
        if "newer" in str(error) or not _is_unwritable(path):
            raise _as_store_error(error, path) from None
    for options in ("mode=ro", "immutable=1"):
        try:
            connection = sqlite3.connect(f"{uri}?{options}", uri=True, isolation_level=None)
            version = read_schema_version(connection)  # fails here when -shm cannot be made
        except sqlite3.Error:
            continue
        refuse_newer_schema(version, path)
        if version < LATEST_VERSION:
            connection.close()
            raise StoreError(
                f"{path} is read-only and has store schema version {version}; this cutaway "
                f"reads version {LATEST_VERSION}: upgrade it once from a writable copy"
            )
        return connection
    raise StoreError(f"cannot open the store {path} for reading")


def _is_unwritable(path: Path) -> bool:
    return not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK)


def _as_store_error(error: Exception, path: Path) -> StoreError:
    if isinstance(error, StoreError):
        return error
    return StoreError(f"cannot open the store {path}: {error}")


def _enable_wal(connection: sqlite3.Connection) -> None:
    """Switch a database to WAL mode (a lasting property of the file), once.

    Switching needs an exclusive lock, and SQLite reports SQLITE_BUSY at once, without calling
    the busy handler, while another process has the file open in rollback mode: which happens
    when two processes create a new database together. So this one statement waits here."""
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    pause_seconds = 0.001
    while True:
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY  # primary code of any BUSY_*
            if not busy or time.monotonic() > deadline:
                raise
        time.sleep(pause_seconds)
        pause_seconds = min(pause_seconds * 2, 0.05)
