"""A stop signal at any instant of a fast experiment: whenever SIGINT, SIGTERM or SIGHUP lands
(at start, in a hook, in a run, while a run is stored, between runs, during cleanup), cutaway
exits with 128 + its number, the experiment is never left `running`, every run it said it kept
is stored (and no more), and every setup that began was cleaned up. So does a second signal
that follows the first. The instants count from the first instant of cutaway's own code (the
interpreter's start before it is no program's to cover).

The fixed instants run in every test run. Random instants, hundreds of them, are opt-in:
``CUTAWAY_SIGNAL_STRESS=300 pytest tests/integration/test_signal_stress.py -k random``."""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import sqlite3
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from tests.cutaway_command import CUTAWAY

STRESS_TRIES = int(os.environ.get("CUTAWAY_SIGNAL_STRESS", "0") or 0)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
KEPT = re.compile(r"(\d+) runs in \d+ complete rounds are stored")


def fast_experiment(directory: Path) -> Path:
    """Many short runs with hooks around each: an instant picked at random lands in any step."""
    path = directory / "experiment.toml"
    path.write_text(
        textwrap.dedent("""\
        name = "stress"
        rounds = 40
        warmup_rounds = 1
        [[variants]]
        name = "a"
        command = "true"
        setup = "echo setup >> hooks"
        prepare = "true"
        cleanup = "echo cleanup >> hooks"
        [[variants]]
        name = "b"
        command = "true"
        conclude = "true"
        """)
    )
    return path


def stored(db: Path) -> tuple[str | None, int]:
    """The experiment's status and its stored runs that count (interrupted ones do not)."""
    if not db.exists():
        return None, 0
    with contextlib.closing(sqlite3.connect(db, timeout=30)) as connection:
        try:
            row = connection.execute("SELECT status FROM experiments").fetchone()
            (runs,) = connection.execute(
                "SELECT COUNT(*) FROM runs WHERE status != 'interrupted'"
            ).fetchone()
        except sqlite3.OperationalError:  # the schema was not made yet
            return None, 0
    return (None if row is None else str(row[0])), int(runs)


def signal_masks(pid: int) -> tuple[int, int]:
    """The process's blocked and caught signals (/proc/PID/status), as bit masks."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status if ":" in line)
        return int(fields["SigBlk"], 16), int(fields["SigCgt"], 16)
    return 0, 0


TERM_BIT = 1 << (signal.SIGTERM - 1)


def holds_stop_signals(pid: int) -> bool:
    """Whether cutaway's own code has begun: its entry point blocks SIGTERM (until the
    handlers are installed) or has a handler for it. Before that only the interpreter runs,
    whose start no Python program can cover: a signal then takes its default action."""
    blocked, caught = signal_masks(pid)
    return bool((blocked | caught) & TERM_BIT)


def stop_at(
    directory: Path, delay_seconds: float, stop_signal: int, then: int | None = None
) -> None:
    """Run the experiment, send ``stop_signal`` ``delay_seconds`` after cutaway's own code
    began, and ``then`` (a second signal) 10 ms after it; check the result."""
    path = fast_experiment(directory)
    process = subprocess.Popen(
        [*CUTAWAY, "run", str(path)],
        cwd=directory,
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        deadline = time.monotonic() + 60
        while not holds_stop_signals(process.pid) and time.monotonic() < deadline:
            time.sleep(0.0005)
        time.sleep(delay_seconds)
        process.send_signal(stop_signal)
        statuses = {128 + stop_signal}
        if then is not None:
            time.sleep(0.01)
            # Two signals 10 ms apart may be taken together: held by the kernel while the
            # commands are imported, or both pending when Python runs its handlers (a thread
            # other than the main one may receive them). Either way they are taken in the
            # order of their numbers, and the first taken decides the status.
            statuses.add(128 + then)
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(then)
        _, stderr = process.communicate(timeout=60)  # never a signal lost: no hang
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    second = "" if then is None else f" and {signal.Signals(then).name}"
    where = (
        f"{signal.Signals(stop_signal).name}{second} after {delay_seconds:.3f} s, exit "
        f"{process.returncode}:\n{stderr}"
    )
    status, runs = stored(directory / ".cutaway" / "cutaway.db")
    if process.returncode == 0:  # it ended before the signal came: nothing to check
        assert status == "complete", where
        return
    # Never killed by a signal's default action (while the commands are imported, or while
    # the process exits after a first signal): always the status of the first one.
    assert "Traceback" not in stderr, where
    assert process.returncode in statuses, where
    assert status in (None, "incomplete", "complete"), where  # never left "running"
    said = KEPT.search(stderr)
    if status == "incomplete" and said is not None:
        assert int(said.group(1)) == runs, where
    hooks = (directory / "hooks").read_text().split() if (directory / "hooks").exists() else []
    # A setup stopped half-way (before it wrote its line) is cleaned up too.
    assert hooks.count("setup") <= hooks.count("cleanup") <= 1, where


@pytest.mark.parametrize("stop_signal", STOP_SIGNALS, ids=lambda number: number.name)
@pytest.mark.parametrize("delay_seconds", [0.0, 0.05, 0.15, 0.4, 0.8, 1.2, 1.7, 2.4])
def test_a_stop_signal_at_fixed_instants(
    tmp_path: Path, delay_seconds: float, stop_signal: int
) -> None:
    """From the first instant of cutaway's own code: 0 s and 0.05 s land while the commands
    are imported, before any handler of cutaway's is installed."""
    stop_at(tmp_path, delay_seconds, stop_signal)


@pytest.mark.parametrize("stop_signal", STOP_SIGNALS, ids=lambda number: number.name)
@pytest.mark.parametrize("delay_seconds", [0.0, 0.1, 0.6])
def test_a_second_signal_soon_after_the_first_changes_nothing(
    tmp_path: Path, delay_seconds: float, stop_signal: int
) -> None:
    """SIGTERM 10 ms after the first signal, while the command stops or the process exits:
    the first one's status all the same, never the second one's default action."""
    stop_at(tmp_path, delay_seconds, stop_signal, then=signal.SIGTERM)


@pytest.mark.slow
@pytest.mark.skipif(STRESS_TRIES == 0, reason="opt-in: CUTAWAY_SIGNAL_STRESS=TRIES")
def test_a_stop_signal_at_random_instants(tmp_path: Path) -> None:
    seed = int(os.environ.get("CUTAWAY_SIGNAL_STRESS_SEED", time.time_ns() % 10**6))
    chance = random.Random(seed)
    for attempt in range(STRESS_TRIES):
        directory = tmp_path / str(attempt)
        directory.mkdir()
        delay_seconds = chance.uniform(0.0, 3.0)  # after cutaway's own code began
        stop_signal = chance.choice(STOP_SIGNALS)
        then = chance.choice((None, *STOP_SIGNALS))
        try:
            stop_at(directory, delay_seconds, stop_signal, then)
        except AssertionError as failure:
            raise AssertionError(f"try {attempt} (CUTAWAY_SIGNAL_STRESS_SEED={seed})") from failure
