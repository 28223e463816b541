"""Interrupts and hung hooks, end to end with real processes: whatever stops an experiment, the
hooks it started are stopped, every cleanup whose setup began runs, and nothing is left behind
(issue #9, section 1)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

CUTAWAY = [sys.executable, "-m", "cutaway"]


def sleeper(tmp_path: Path) -> str:
    """A sleep command line unique to this test, so pgrep finds only its own processes."""
    return f"sleep 97.{abs(hash(str(tmp_path))) % 10**6:06d}"


def leftovers(command: str) -> str:
    time.sleep(0.3)  # let a killed group's processes be reaped
    found = subprocess.run(["pgrep", "-f", "-x", command], capture_output=True, text=True)
    return found.stdout.strip()


def experiment(tmp_path: Path, *, setup: str, prepare: str = "", extra: str = "") -> Path:
    path = tmp_path / "experiment.toml"
    path.write_text(
        textwrap.dedent(f"""\
        name = "interrupts"
        rounds = 200
        warmup_rounds = 0
        {extra}
        [[variants]]
        name = "a"
        command = "sleep 0.05"
        setup = "{setup}"
        prepare = "{prepare}"
        cleanup = "echo cleanup-a >> cleanups"
        [[variants]]
        name = "b"
        command = "sleep 0.05"
        setup = "echo setup-b"
        cleanup = "echo cleanup-b >> cleanups"
        """)
    )
    return path


def start(path: Path, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CUTAWAY, "run", str(path)],
        cwd=cwd,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )


def wait_for(path: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.05)


def status_of_latest(cwd: Path) -> str:
    out = subprocess.run(
        [*CUTAWAY, "export", "--format", "json"], cwd=cwd, capture_output=True, text=True
    ).stdout
    status: str = json.loads(out)["experiments"][0]["status"]
    return status


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_during_setup_stops_the_hook_and_still_cleans_up(
    tmp_path: Path, stop_signal: int
) -> None:
    hung = sleeper(tmp_path)
    path = experiment(tmp_path, setup=f"touch setup-started; {hung}")
    process = start(path, tmp_path)
    wait_for(tmp_path / "setup-started")
    process.send_signal(stop_signal)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    # Variant a's setup had begun, so its cleanup runs; b's setup never started.
    assert (tmp_path / "cleanups").read_text().split() == ["cleanup-a"]
    assert leftovers(hung) == ""
    assert status_of_latest(tmp_path) == "incomplete"


def test_a_hook_that_hangs_is_stopped_at_its_time_limit(tmp_path: Path) -> None:
    hung = sleeper(tmp_path)
    path = experiment(tmp_path, setup="true", prepare=hung, extra='hook_timeout = "1s"')
    started = time.monotonic()
    process = start(path, tmp_path)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1, stderr
    assert f"prepare hook `{hung}` timed out after 1 s" in stderr
    assert time.monotonic() - started < 50  # not the hook's 97 s: it was stopped
    assert sorted((tmp_path / "cleanups").read_text().split()) == ["cleanup-a", "cleanup-b"]
    assert leftovers(hung) == ""


def test_a_second_interrupt_stops_a_prepare_hook_that_the_first_waited_for(
    tmp_path: Path,
) -> None:
    hung = sleeper(tmp_path)
    path = experiment(tmp_path, setup="true", prepare=f"touch prepare-started; {hung}")
    process = start(path, tmp_path)
    wait_for(tmp_path / "prepare-started")
    process.send_signal(signal.SIGINT)
    time.sleep(1.0)
    assert process.poll() is None  # the first interrupt waits for the prepare hook...
    process.send_signal(signal.SIGINT)  # ...the second stops it
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "waiting for the prepare hook of 'a' to finish" in stderr
    assert sorted((tmp_path / "cleanups").read_text().split()) == ["cleanup-a", "cleanup-b"]
    assert leftovers(hung) == ""


def test_a_closed_terminal_mid_rounds_keeps_runs_and_cleans_up(tmp_path: Path) -> None:
    path = experiment(tmp_path, setup="true", prepare="touch running")
    process = start(path, tmp_path)
    wait_for(tmp_path / "running")
    time.sleep(0.5)
    process.send_signal(signal.SIGHUP)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert sorted((tmp_path / "cleanups").read_text().split()) == ["cleanup-a", "cleanup-b"]
    assert status_of_latest(tmp_path) == "incomplete"  # never left "running"
