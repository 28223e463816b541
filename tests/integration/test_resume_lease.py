"""An experiment belongs to the process running it: `--resume` never takes over a live one,
and picks the newest experiment whose owner is gone."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from tests.cutaway_command import CUTAWAY, cutaway

LONG = ["run", "-c", "sleep 0.05", "-c", "sleep 0.05", "-n", "a", "-n", "b", "--rounds", "400"]


def start(cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CUTAWAY, *args],
        cwd=cwd,
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )


def wait_for_runs(cwd: Path, experiment_id: int, count: int = 3) -> None:
    db = cwd / ".cutaway" / "cutaway.db"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            with sqlite3.connect(db) as connection:
                (stored,) = connection.execute(
                    "SELECT COUNT(*) FROM runs WHERE experiment_id = ?", (experiment_id,)
                ).fetchone()
        except sqlite3.OperationalError:
            continue
        if stored >= count:
            return
    raise AssertionError(f"experiment {experiment_id} stored no runs")


def test_resume_refuses_a_live_experiment_and_takes_one_whose_owner_died(
    tmp_path: Path,
) -> None:
    # Experiment 1 is killed outright: no cleanup, still "running", its owner gone.
    killed = start(tmp_path, *LONG)
    wait_for_runs(tmp_path, 1)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    # Experiment 2 is running.
    live = start(tmp_path, *LONG)
    try:
        wait_for_runs(tmp_path, 2)
        refused = cutaway("run", "--resume", "2", cwd=tmp_path)
        assert refused.returncode == 1
        assert f"experiment #2 is being run by process {live.pid}" in refused.stderr
        # Without an id, --resume passes over the live one and takes the orphan...
        resumed = start(tmp_path, "run", "--resume")
        time.sleep(1.5)
        # ...which it now owns: a second resume of it is refused in turn.
        again = cutaway("run", "--resume", "1", cwd=tmp_path)
        assert again.returncode == 1 and "experiment #1 is being run by process" in again.stderr
        resumed.send_signal(signal.SIGINT)
        _, resumed_stderr = resumed.communicate(timeout=60)
        assert "resuming experiment #1" in resumed_stderr
    finally:
        live.send_signal(signal.SIGINT)
        live.communicate(timeout=60)
    listing = cutaway("list", cwd=tmp_path).stdout
    assert "running" not in listing  # both interrupted cleanly: incomplete, owner released
