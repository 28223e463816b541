"""The `cutaway` program ends without the interpreter's finalization (cutaway.cli.main.run):
what an ordinary exit does that matters must still happen, in a fresh interpreter each."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ENVIRONMENT = {**os.environ, "COLUMNS": "100"}


def cutaway(*arguments: str) -> subprocess.CompletedProcess[str]:
    """``python -m cutaway ARGUMENTS`` in a fresh interpreter, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "cutaway", *arguments],
        capture_output=True,
        text=True,
        env=ENVIRONMENT,
    )


def program(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run in a fresh interpreter, its output captured."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=ENVIRONMENT
    )


def test_a_run_leaves_every_run_in_the_store_file_itself(tmp_path: Path) -> None:
    """The store is closed before the process ends: its WAL is checkpointed into the file,
    so that the file alone (copied, say) holds every run, and no -wal file is left."""
    db = tmp_path / "x.db"
    result = cutaway("run", "-c", "true", "--rounds", "3", "--db", str(db))
    assert result.returncode == 0, result.stderr
    assert not Path(f"{db}-wal").exists()
    # immutable=1: the file as it is on disk, without reading a WAL beside it.
    connection = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        (runs,) = connection.execute("SELECT count(*) FROM runs").fetchone()
    finally:
        connection.close()
    assert runs == 4  # the warmup run and three rounds


def test_a_command_that_leaves_its_store_to_be_collected_still_closes_it(tmp_path: Path) -> None:
    """`report` drops its store without closing it: the store closes with its engine, not
    when the cyclic collector would have run (never, in a process that ends at once)."""
    db = tmp_path / "x.db"
    ran = cutaway("run", "-c", "true", "--rounds", "1", "--db", str(db))
    assert ran.returncode == 0, ran.stderr
    for command in (["report"], ["export", "--format", "json"]):
        result = cutaway(*command, "--db", str(db))
        assert result.returncode == 0, result.stderr
        assert sorted(path.name for path in tmp_path.iterdir()) == ["x.db"], command


def test_atexit_functions_run_and_buffered_output_is_written() -> None:
    result = program(
        "import atexit, sys\n"
        "from cutaway.cli import main\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        "sys.argv = ['cutaway', '--version']\n"
        "main.run()\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "atexit ran"
    assert result.stdout.startswith("cutaway ")


def test_a_thread_still_running_is_waited_for_as_at_an_ordinary_exit() -> None:
    result = program(
        "import sys, threading, time\n"
        "from cutaway.cli import main\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))).start()\n"
        "sys.argv = ['cutaway', '--version']\n"
        "main.run()\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "thread done"


def test_the_exit_status_is_the_commands() -> None:
    result = program(
        "import sys\nfrom cutaway.cli import main\nsys.argv = ['cutaway', 'nonsense']\nmain.run()\n"
    )
    assert result.returncode == 2
    assert "nonsense" in result.stderr


def test_a_profiler_watching_gets_its_ordinary_exit(tmp_path: Path) -> None:
    # `python -m cProfile -o FILE -m cutaway ...` (and coverage) write what they saw as the
    # interpreter ends: skipping that left no profile at all.
    output = tmp_path / "profile.out"
    result = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(output), "-m", "cutaway", "--version"],
        capture_output=True,
        text=True,
        env=ENVIRONMENT,
    )
    assert result.returncode == 0, result.stderr
    assert output.stat().st_size > 0
