"""Shared pytest options and fixtures."""

from __future__ import annotations

import itertools
import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from filesystems import Tmpfs
from postgresql_server import PostgresServer, ServerUnavailable, running_server

from cutaway.api import use_registered_probes


def _children_start_with_default_stop_signals() -> None:
    """Started in the background (`./scripts/test &` from a script, nohup, some CI runners),
    the suite inherits SIGINT (and, under nohup, SIGHUP) ignored, and so would every cutaway it
    starts: a test that sends it Ctrl-C would wait for ever. An ignored disposition survives
    exec; a handler does not (the child starts with the default). So an ignored one is replaced
    with a handler that does nothing: the suite still ignores it, its children do not."""
    for stop_signal in (signal.SIGINT, signal.SIGHUP):
        if signal.getsignal(stop_signal) is signal.SIG_IGN:
            signal.signal(stop_signal, _ignore)


def _ignore(signal_number: int, frame: object) -> None:
    pass


_children_start_with_default_stop_signals()


def _calibrations_cached_apart() -> None:
    """The suite's cutaway processes keep the harness's cost (cutaway.runner.calibration) in a
    cache of their own, measured once for the whole suite, never in the user's home."""
    if not os.environ.get("CUTAWAY_CACHE_DIR"):
        os.environ["CUTAWAY_CACHE_DIR"] = tempfile.mkdtemp(prefix="cutaway-test-cache-")


_calibrations_cached_apart()

# The runner and the analysis read the probes' plugins from what a layer above hands them
# (cutaway.probes.core): the tests that call them directly get the registered ones, as the
# library and the command line do, whatever module they import first.
use_registered_probes()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite the expected outputs in tests/golden/ instead of comparing with them",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when golden files are to be rewritten (pytest --update-golden)."""
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Tmpfs]:
    """Mount small filesystems with ``tmpfs.mount(size)``; each is unmounted after the test."""
    mounts = Tmpfs(tmp_path)
    try:
        yield mounts
    finally:
        mounts.unmount_all()


# -- the store's engines --------------------------------------------------------------------------

ENGINES = ("sqlite", "postgresql")
_databases = itertools.count(1)


@pytest.fixture(scope="session")
def postgresql_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of Debian's, started in a temporary directory for the session and
    stopped after it (tests/postgresql_server.py); the tests that need it are skipped, saying
    why, only where it cannot start."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install 'cutaway[postgresql]')")
    server = running_server()
    try:
        started = server.__enter__()
    except ServerUnavailable as error:
        pytest.skip(f"PostgreSQL cannot start here: {error}")
    try:
        yield started
    finally:
        server.__exit__(None, None, None)


@pytest.fixture
def postgresql_url(postgresql_server: PostgresServer) -> Iterator[str]:
    """The URL of a new, empty database of this test's own (over the Unix socket)."""
    name = f"test_{next(_databases)}"
    url = postgresql_server.new_database(name)
    yield url
    postgresql_server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=ENGINES)
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a new store goes, on each engine: an SQLite file that does not exist yet (in a
    directory that does not either), or an empty PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "nested" / "dir" / "cutaway.db")
    return str(request.getfixturevalue("postgresql_url"))


@pytest.fixture(scope="module")
def native_build(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """A directory for one test module's builds of native/ code (tests/native_build.py),
    shared by its tests."""
    module = request.module.__name__.rsplit(".", 1)[-1]
    return tmp_path_factory.mktemp(f"{module}_build")
