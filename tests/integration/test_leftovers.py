"""What a measured command leaves running, end to end with real processes:
`sh -c 'sleep 100 & echo hi'` leaves nothing behind once the experiment ends, in its process
group or escaped from it (setsid), after an interrupt or a SIGKILL of cutaway too; the report
says so; `--keep-leftovers` keeps them; what a setup hook starts is never touched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cutaway_command import CUTAWAY


@pytest.fixture
def sleeper(tmp_path: Path) -> Iterator[str]:
    """A sleep command line unique to this test, so pgrep finds only its own processes; any
    still running at the end (kept ones) are killed."""
    command = f"sleep 96.{abs(hash(str(tmp_path))) % 10**6:06d}"
    yield command
    for pid in running(command):
        os.kill(pid, signal.SIGKILL)


def running(command: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", "-x", command], capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split()]


def eventually(condition: Callable[[], object], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def run_quick(tmp_path: Path, command: str, *options: str) -> subprocess.CompletedProcess[str]:
    arguments = ["-c", command, "--rounds", "3", "--warmup", "0", *options]
    return subprocess.run(
        [*CUTAWAY, "run", *arguments, "--export-json", "report.json", "--db", "store.db"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
    )


def report(tmp_path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((tmp_path / "report.json").read_text())
    return document


def leftover_cautions(document: dict[str, Any]) -> list[str]:
    return [c["message"] for c in document["cautions"] if c["kind"] == "leftovers"]


def test_what_a_run_leaves_behind_is_stopped_and_reported(tmp_path: Path, sleeper: str) -> None:
    done = run_quick(tmp_path, f"sh -c '{sleeper} & echo hi'")
    assert done.returncode == 0, done.stderr
    assert running(sleeper) == []
    document = report(tmp_path)
    (runs,) = document["runs"].values()
    assert runs["leftover_processes"] == [1, 1, 1]
    (caution,) = leftover_cautions(document)
    assert caution.startswith("3 of 3 runs of ")
    assert "they were stopped when each run ended" in caution
    assert "left a process running" in done.stderr  # said once, as it happens
    assert "left processes running" in done.stdout  # and in the report


def test_a_process_that_escapes_the_runs_group_is_found_too(tmp_path: Path, sleeper: str) -> None:
    done = run_quick(tmp_path, f"sh -c 'setsid {sleeper} & echo hi'")
    assert done.returncode == 0, done.stderr
    assert running(sleeper) == []
    (runs,) = report(tmp_path)["runs"].values()
    assert runs["leftover_processes"] == [1, 1, 1]


def test_keep_leftovers_leaves_them_running_and_says_so(tmp_path: Path, sleeper: str) -> None:
    done = run_quick(tmp_path, f"sh -c '{sleeper} & echo hi'", "--keep-leftovers")
    assert done.returncode == 0, done.stderr
    assert len(running(sleeper)) == 3  # one per run, killed by the fixture
    (caution,) = leftover_cautions(report(tmp_path))
    assert "they were kept running (keep_leftovers)" in caution


def _experiment(tmp_path: Path, command: str, setup: str = "", cleanup: str = "") -> Path:
    path = tmp_path / "experiment.toml"
    path.write_text(
        textwrap.dedent(f"""\
        name = "leftovers"
        rounds = 3
        warmup_rounds = 0
        shell = true
        [[variants]]
        name = "a"
        command = "{command}"
        setup = "{setup}"
        cleanup = "{cleanup}"
        """)
    )
    return path


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGKILL])
def test_nothing_a_run_started_outlives_an_interrupted_or_killed_cutaway(
    tmp_path: Path, sleeper: str, stop_signal: int
) -> None:
    # The run leaves a process out of its group, then keeps running itself.
    command = f"setsid {sleeper} & touch started; exec sleep 30"
    path = _experiment(tmp_path, command)
    process = subprocess.Popen(
        [*CUTAWAY, "run", str(path), "--db", "store.db"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert eventually(lambda: (tmp_path / "started").exists(), 60)
    assert eventually(lambda: running(sleeper))
    process.send_signal(stop_signal)
    process.wait(timeout=30)
    assert eventually(lambda: not running(sleeper))


def test_what_a_setup_hook_starts_is_not_a_leftover(tmp_path: Path, sleeper: str) -> None:
    # A daemon started by setup (as examples/nscd does) must run through every measured run.
    path = _experiment(
        tmp_path,
        command=f"pgrep -f -x '{sleeper}'",
        setup=f"setsid {sleeper} > /dev/null 2>&1 &",
        cleanup=f"pkill -f -x '{sleeper}'",
    )
    done = subprocess.run(
        [*CUTAWAY, "run", str(path), "--db", "store.db", "--export-json", "report.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    document = report(tmp_path)
    assert document["runs"]["a"]["statuses"] == ["ok", "ok", "ok"]
    assert document["runs"]["a"]["leftover_processes"] == [0, 0, 0]
    assert leftover_cautions(document) == []
