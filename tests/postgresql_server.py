"""A real PostgreSQL server for the tests of the team store: Debian's ``initdb`` and ``pg_ctl``
(package ``postgresql``) run in a temporary directory, listening on 127.0.0.1 at a free port
and on a Unix socket in that directory, stopped when the session ends (the ``postgresql``
fixture in conftest.py).

initdb refuses to run as root, so under root the server runs as the ``postgres`` user that the
package creates. Local (socket) connections are trusted; TCP connections need the password, so
that a URL with a password is tested for real."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "postgres"
PASSWORD = "s3cret-Pa55"  # the superuser's password over TCP; tests check it is never printed


class ServerUnavailable(Exception):
    """The server cannot start here; the message says why (the tests are skipped with it)."""


@dataclass
class PostgresServer:
    directory: Path  # data directory and socket live under it
    port: int

    @property
    def socket_directory(self) -> str:
        return str(self.directory / "socket")

    def url(self, database: str = "postgres", *, tcp: bool = False) -> str:
        """A URL of ``database``: over the Unix socket (trusted) or over TCP with the password."""
        if tcp:
            return f"postgresql://{SUPERUSER}:{PASSWORD}@127.0.0.1:{self.port}/{database}"
        host = urllib.parse.quote(self.socket_directory, safe="")
        return f"postgresql://{SUPERUSER}@/{database}?host={host}&port={self.port}"

    def admin(self, sql: str, database: str = "postgres") -> list[tuple[object, ...]]:
        """Run one statement as the superuser, outside a transaction; its rows."""
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as connection:
            cursor = connection.execute(sql)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    def new_database(self, name: str) -> str:
        """An empty database of its own for one test; its URL (over the socket)."""
        self.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.admin(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _binaries() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found:
        raise ServerUnavailable(
            "no PostgreSQL server: install Debian's postgresql package (pg_ctl is looked for "
            "under /usr/lib/postgresql/*/bin)"
        )
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_server_user() -> tuple[list[str], int | None, int | None]:
    """The command prefix that runs the server as a user other than root, with that user's
    ids (None when this process is not root and runs it itself)."""
    if os.geteuid() != 0:
        return [], None, None
    try:
        user = pwd.getpwnam(SUPERUSER)
    except KeyError:
        raise ServerUnavailable(
            f"running as root and there is no {SUPERUSER!r} user to run the server as "
            "(initdb refuses root)"
        ) from None
    if shutil.which("runuser") is None:
        raise ServerUnavailable("running as root and runuser is missing (initdb refuses root)")
    return ["runuser", "-u", SUPERUSER, "--"], user.pw_uid, user.pw_gid


def _run(command: list[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0:
        output = (result.stderr or result.stdout).strip()[-2000:]
        raise ServerUnavailable(f"{what} failed (exit {result.returncode}): {output}")


@contextlib.contextmanager
def running_server(*, durable: bool = False) -> Iterator[PostgresServer]:
    """Start a throw-away server, yield it, and stop it and remove its files afterwards (also
    when the tests fail). ServerUnavailable when it cannot start. Tests run it without fsync;
    ``durable`` keeps PostgreSQL's defaults (a benchmark's figures must be a real server's)."""
    binaries = _binaries()
    prefix, uid, gid = _as_server_user()
    # Not under pytest's tmp_path: that is private to root, and the server runs as postgres.
    directory = Path(tempfile.mkdtemp(prefix="cutaway-postgresql-"))
    data = directory / "data"
    (directory / "socket").mkdir()
    password_file = directory / "password"
    password_file.write_text(PASSWORD + "\n")
    if uid is not None and gid is not None:
        for path in (directory, directory / "socket", password_file):
            os.chown(path, uid, gid)
    server = PostgresServer(directory, _free_port())
    started = False
    try:
        _run(
            [
                *prefix,
                str(binaries / "initdb"),
                "--pgdata",
                str(data),
                "--username",
                SUPERUSER,
                "--pwfile",
                str(password_file),
                "--auth-local",
                "trust",
                "--auth-host",
                "scram-sha-256",
                "--encoding",
                "UTF8",
                "--no-sync",
            ],
            "initdb",
        )
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={server.port}"
            f" -c unix_socket_directories={server.socket_directory}"
        )
        if not durable:
            options += " -c fsync=off -c max_connections=100 -c shared_buffers=16MB"
        _run(
            [
                *prefix,
                str(binaries / "pg_ctl"),
                "--pgdata",
                str(data),
                "--log",
                str(directory / "server.log"),
                "--options",
                options,
                "--wait",
                "--timeout",
                "60",
                "start",
            ],
            "pg_ctl start",
        )
        started = True
        yield server
    finally:
        if started:
            stop = ["--pgdata", str(data), "--mode", "immediate", "--wait", "stop"]
            subprocess.run(
                [*prefix, str(binaries / "pg_ctl"), *stop],
                capture_output=True,
                timeout=60,
                check=False,
            )
        shutil.rmtree(directory, ignore_errors=True)
