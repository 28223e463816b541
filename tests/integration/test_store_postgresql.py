"""The team store on PostgreSQL, against a real server (conftest.py):
the schema the migrations build, the commands on a ``postgresql://`` URL, a connection that
drops mid-experiment, and URLs that must never be printed whole."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from postgresql_server import PASSWORD, PostgresServer

from cutaway.model import Run, RunStatus, Spec, Variant
from cutaway.store import LATEST_VERSION, Store, StoreError
from cutaway.store import schema as store_schema
from cutaway.store.postgresql import VERSION_TABLE, VERSION_TABLE_DDL, postgresql_statements
from tests.cutaway_command import CUTAWAY
from tests.cutaway_command import cutaway as run_cutaway

QUICK = ["run", "-c", "sleep 0.01", "-c", "sleep 0.02", "-n", "a", "-n", "b", "--rounds", "3"]

# The types each engine gives a column, as one name: the schemas must agree on these.
SQLITE_TYPES = {"INTEGER": "integer", "REAL": "real", "TEXT": "text", "BLOB": "blob"}
POSTGRESQL_TYPES = {"bigint": "integer", "double precision": "real", "text": "text"}
POSTGRESQL_TYPES["bytea"] = "blob"


def cutaway(
    *args: str, db: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return run_cutaway(*args, cwd=cwd, env={"CUTAWAY_DB": db} if db is not None else None)


def query(url: str, sql: str, parameters: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as connection:
        cursor = connection.execute(sql, parameters or None)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


def sqlite_columns(path: Path) -> dict[str, list[tuple[str, str, bool]]]:
    with sqlite3.connect(path) as raw:
        tables = [
            name
            for (name,) in raw.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name"
            )
        ]
        found = {
            table: [
                (name, SQLITE_TYPES[kind], bool(not_null or primary_key))
                for _, name, kind, not_null, _, primary_key in raw.execute(
                    f"PRAGMA table_info({table})"
                )
            ]
            for table in tables
        }
    raw.close()
    return found


def postgresql_columns(url: str) -> dict[str, list[tuple[str, str, bool]]]:
    rows = query(
        url,
        "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns"
        " WHERE table_schema = 'public' ORDER BY table_name, ordinal_position",
    )
    found: dict[str, list[tuple[str, str, bool]]] = {}
    for table, column, kind, nullable in rows:
        if table != VERSION_TABLE:  # PostgreSQL's user_version
            found.setdefault(table, []).append((column, POSTGRESQL_TYPES[kind], nullable == "NO"))
    return found


def test_both_engines_build_the_same_tables_and_columns(
    tmp_path: Path, postgresql_url: str
) -> None:
    """One list of migrations: a column added to it reaches both engines, with the same name,
    kind and nullability, in the same place."""
    Store(tmp_path / "cutaway.db").close()
    Store(postgresql_url).close()
    sqlite_schema = sqlite_columns(tmp_path / "cutaway.db")
    assert sqlite_schema == postgresql_columns(postgresql_url)
    assert {"experiments", "variants", "runs", "measurements", "triage"} <= set(sqlite_schema)
    assert query(postgresql_url, f"SELECT version FROM {VERSION_TABLE}") == [(LATEST_VERSION,)]


def test_an_older_postgresql_store_is_migrated_keeping_its_runs(postgresql_url: str) -> None:
    """Version 7 changes a unique key that measurements' foreign key does not depend on; in
    PostgreSQL the table is altered, not rebuilt, so the foreign keys still cascade."""
    spec = Spec(name="d", variants=(Variant("a", ("true",)),), baseline="a")
    with psycopg.connect(postgresql_url, autocommit=True) as raw:
        for migration in store_schema.MIGRATIONS[:6]:
            for statement in postgresql_statements(migration):
                raw.execute(statement)  # type: ignore[call-overload]
        raw.execute(VERSION_TABLE_DDL)  # type: ignore[call-overload]
        raw.execute(f"INSERT INTO {VERSION_TABLE} (version) VALUES (6)")  # type: ignore[call-overload]
        raw.execute(
            "INSERT INTO experiments (id, name, status, created_at, spec_json, environment_json,"
            " cutaway_version) VALUES (1, 'd', 'complete', 0, %s, '{}', 'old')",
            (json.dumps(spec.to_dict()),),
        )
        raw.execute("INSERT INTO variants VALUES (1, 0, 'a', '{}')")
        raw.execute(
            "INSERT INTO runs (id, experiment_id, variant, round_index, order_in_round, status,"
            " started_at) VALUES (7, 1, 'a', 0, 0, 'ok', 0)"
        )
        raw.execute("INSERT INTO measurements VALUES (7, 'wall', 1.5)")
    with Store(postgresql_url) as store:
        (run,) = store.runs(1)
        assert (run.purpose, run.metrics["wall"]) == ("timed", 1.5)
        store.add_run(1, Run("a", 0, 0, RunStatus.OK, 0, None, {"wall": 2.5}, 1.0))
        assert [r.metrics["wall"] for r in store.runs(1)] == [2.5]
    # The replaced run's measurement went with it: the foreign key still cascades.
    assert query(postgresql_url, "SELECT run_id, value FROM measurements") != [(7, 1.5)]
    assert len(query(postgresql_url, "SELECT * FROM measurements")) == 1


def test_a_newer_postgresql_store_is_refused_and_left_untouched(postgresql_url: str) -> None:
    Store(postgresql_url).close()
    query(postgresql_url, f"UPDATE {VERSION_TABLE} SET version = %s", (LATEST_VERSION + 5,))
    with pytest.raises(StoreError, match=f"version {LATEST_VERSION + 5}.*was not changed"):
        Store(postgresql_url)
    assert query(postgresql_url, f"SELECT version FROM {VERSION_TABLE}") == [(LATEST_VERSION + 5,)]


def test_reading_commands_never_create_a_store_in_an_empty_database(postgresql_url: str) -> None:
    listed = cutaway("list", "--db", postgresql_url)
    assert listed.returncode == 1
    assert "no store in postgresql://" in listed.stderr and "Traceback" not in listed.stderr
    assert query(postgresql_url, "SELECT to_regclass('experiments')") == [(None,)]


def test_every_command_works_on_a_postgresql_url(postgresql_url: str, tmp_path: Path) -> None:
    """CUTAWAY_DB names the store for every command, as --db does."""
    first = cutaway(*QUICK, "--label", "v1", db=postgresql_url, cwd=tmp_path)
    assert first.returncode in (0, 1), first.stderr  # 1: sleep 0.01 vs 0.02 may be flagged
    assert "stored as #1 in postgresql://" in first.stderr
    second = cutaway(*QUICK, "--label", "v2", "--db", postgresql_url, cwd=tmp_path)
    assert "stored as #2" in second.stderr
    for args in (
        ["list"],
        ["report", "1"],
        ["compare", "1", "2"],
        ["export", "2", "--format", "json"],
        ["export", "2", "--format", "runs-csv"],
        ["history", "quick: a vs b"],
    ):
        result = cutaway(*args, db=postgresql_url, cwd=tmp_path)
        assert result.returncode == 0, (args, result.stderr)
        assert "Traceback" not in result.stderr
    listing = cutaway("list", db=postgresql_url).stdout.splitlines()
    assert listing[0].startswith("#2 ") and listing[1].startswith("#1 ")
    assert not (tmp_path / ".cutaway").exists()  # no SQLite store was made on the side
    check = cutaway(
        "check", "-c", "sleep 0.01", "-c", "sleep 0.01", "--rounds", "3", db=postgresql_url
    )
    assert "stored as #3 in postgresql://" in check.stderr, check.stderr


def test_a_url_with_a_password_is_never_printed(
    postgresql_server: PostgresServer, postgresql_url: str, tmp_path: Path
) -> None:
    """Over TCP the server wants the password, so the URL carries it; no output shows it."""
    database = postgresql_url.split("?")[0].rsplit("/", 1)[1]
    url = postgresql_server.url(database, tcp=True)
    assert PASSWORD in url
    outputs = []
    run = cutaway(*QUICK, "--db", url, cwd=tmp_path)
    assert "stored as #1 in postgresql://postgres:***@127.0.0.1:" in run.stderr, run.stderr
    outputs.append(run)
    outputs.append(cutaway("report", "1", db=url))
    outputs.append(cutaway("list", "--db", url))
    outputs.append(cutaway("--help", db=url))
    outputs.append(cutaway("report", "--help", db=url))
    wrong = url.replace(database, "no_such_database")
    refused = cutaway("list", "--db", wrong)
    assert refused.returncode == 1 and "no_such_database" in refused.stderr
    outputs.append(refused)
    query_form = f"postgresql://postgres@127.0.0.1:{postgresql_server.port}/x?password={PASSWORD}"
    outputs.append(cutaway("list", "--db", query_form))
    bad = cutaway("list", "--db", url.replace("127.0.0.1", "127.0.0.1:notaport"))
    outputs.append(bad)
    for result in outputs:
        assert PASSWORD not in result.stdout + result.stderr, result.args
    assert "postgresql://postgres:***@" in cutaway("report", "--help", db=url).stdout


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://user@host:notaport/db",
        "postgresql://user@host/db?no_such_option=1",
        "postgresql://user:pa%zzss@host/db",
    ],
)
def test_a_bad_url_is_bad_input(url: str, tmp_path: Path) -> None:
    result = cutaway("list", "--db", url, cwd=tmp_path)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("cutaway: the store URL postgresql://user")
    assert "is not one libpq reads" in line and "postgresql://USER@HOST" in line
    assert "zz" not in line  # a password, even a broken one, is not shown
    assert not list(tmp_path.iterdir())


def test_without_psycopg_a_url_says_which_extra_to_install(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from cutaway.cli.main import main\n"
        "sys.exit(main(['list', '--db', 'postgresql://user@host/db']))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 1
    assert "pip install 'cutaway[postgresql]'" in result.stderr
    assert "Traceback" not in result.stderr


def wait_for_runs(url: str, count: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            ((stored,),) = query(url, "SELECT COUNT(*) FROM runs")
        except psycopg.Error:
            continue  # the tables are not made yet
        if stored >= count:
            return
    raise AssertionError("the experiment stored no runs")


@pytest.mark.slow
def test_a_dropped_connection_fails_clearly_and_resume_continues(postgresql_url: str) -> None:
    rounds = 40
    quick = ["-c", "sleep 0.05", "-c", "sleep 0.05", "-n", "a", "-n", "b"]
    running = subprocess.Popen(
        [*CUTAWAY, "run", *quick, "--rounds", str(rounds), "--db", postgresql_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        wait_for_runs(postgresql_url, 6)
        # The server ends the experiment's connection, as a restart or a network cut would.
        terminated = query(
            postgresql_url,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = 'cutaway' AND datname = current_database()",
        )
        assert terminated == [(True,)]
        _, stderr = running.communicate(timeout=60)
    finally:
        running.kill()
        running.wait()
    assert running.returncode == 1
    assert "Traceback" not in stderr
    last = stderr.splitlines()[-1]
    assert last.startswith("cutaway: cannot store run ")
    assert f"in {postgresql_url}: the connection to the server was lost" in last
    assert "`cutaway run --resume 1 --db " in stderr
    ((kept,),) = query(postgresql_url, "SELECT COUNT(*) FROM runs")
    assert 6 <= kept < 2 * rounds

    resumed = cutaway("run", "--resume", "1", "--db", postgresql_url)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming experiment #1" in resumed.stderr
    with Store(postgresql_url, create=False) as store:
        assert store.experiment(1).status == "complete"
        table = store.metric_table(1, "wall")
        assert table.rounds.tolist() == list(range(rounds))
        assert not (table.values != table.values).any()  # no NaN: every slot has its run


def test_the_analysis_run_kept_is_found_on_postgresql(postgresql_url: str, tmp_path: Path) -> None:
    """The digest of an experiment's rows (cutaway.kept_analysis) reads the same from
    PostgreSQL each time, so the analysis `run` kept is the one `report` finds."""
    from cutaway import kept_analysis

    run = cutaway(*QUICK, db=postgresql_url, cwd=tmp_path)
    assert run.returncode in (0, 1), run.stderr
    store = Store(postgresql_url, create=False)
    try:
        key = kept_analysis._key(store, 1, False, (None, None))
        assert key is not None and key == kept_analysis._key(store, 1, False, (None, None))
        assert kept_analysis.read_kept(key) is not None
    finally:
        store.close()
