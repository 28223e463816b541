"""Interrupts and hung hooks, end to end with real processes: whatever stops an experiment, the
hooks it started are stopped, every cleanup whose setup began runs, and nothing is left behind."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cutaway_command import CUTAWAY


def sleeper(tmp_path: Path, seconds: int = 97) -> str:
    """A sleep command line unique to this test, so pgrep finds only its own processes."""
    return f"sleep {seconds}.{abs(hash(str(tmp_path))) % 10**6:06d}"


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


@pytest.mark.parametrize(
    ("stop_signal", "hook"),
    [
        (signal.SIGINT, "prepare"),
        (signal.SIGTERM, "prepare"),
        (signal.SIGHUP, "prepare"),
        (signal.SIGTERM, "conclude"),
        (signal.SIGINT, "setup"),
    ],
)
def test_an_interrupt_stops_any_hook_at_once_and_exits_with_its_signal(
    tmp_path: Path, stop_signal: int, hook: str
) -> None:
    """A hook is never waited for once the user asked to stop: its group is stopped within a
    second, the cleanups run, and the exit status is 128 + the signal's number."""
    hung = sleeper(tmp_path)
    hooks = {"setup": "true", "prepare": "", "extra": ""}
    if hook == "conclude":
        hooks["extra"] = (
            f'[[variants]]\nname = "c"\ncommand = "true"\nconclude = "touch {hook}-started; {hung}"'
        )
    else:
        hooks[hook] = f"touch {hook}-started; {hung}"
    path = experiment(tmp_path, setup=hooks["setup"], prepare=hooks["prepare"])
    if hooks["extra"]:
        path.write_text(path.read_text() + hooks["extra"] + "\n")
    process = start(path, tmp_path)
    wait_for(tmp_path / f"{hook}-started")
    time.sleep(0.2)
    process.send_signal(stop_signal)
    stopped_at = time.monotonic()
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 128 + stop_signal, stderr
    assert time.monotonic() - stopped_at < 15  # not the hook's 97 s (no speed asserted)
    assert leftovers(hung) == ""
    assert (tmp_path / "cleanups").read_text().split().count("cleanup-a") == 1
    assert status_of_latest(tmp_path) == "incomplete"


# -- every stop signal in every phase ------------------------------------------------------------
# The list: INT, TERM, HUP and a second INT, each during setup, a hook, a round and the
# report. Each case checks that every cleanup whose setup began ran (in reverse order), that
# nothing was left running, that the store passes SQLite's integrity check, and that the
# experiment resumes to its full count (or, stopped in its report, is stored complete).

PHASES = ("setup", "hook", "round", "report")
STOPS = {
    "INT": (signal.SIGINT,),
    "TERM": (signal.SIGTERM,),
    "HUP": (signal.SIGHUP,),
    "INT-INT": (signal.SIGINT, signal.SIGINT),
}
ROUNDS = 3


def phased_experiment(tmp_path: Path) -> Path:
    """Each phase is slow only while its marker file exists, so the test can stop cutaway in
    it, then remove the marker and resume at full speed."""
    hung, prepare, measured = (sleeper(tmp_path, s) for s in (97, 3, 5))
    path = tmp_path / "experiment.toml"
    path.write_text(
        textwrap.dedent(f"""\
        name = "phases"
        rounds = {ROUNDS}
        warmup_rounds = 0
        [[variants]]
        name = "a"
        command = "sh -c 'touch measuring; [ ! -e slow-round ] || {measured}'"
        setup = "echo setup-a >> hooks; touch setup-started; [ ! -e slow-setup ] || {hung}"
        prepare = "touch prepare-started; [ ! -e slow-hook ] || {prepare}"
        cleanup = "echo cleanup-a >> hooks"
        [[variants]]
        name = "b"
        command = "true"
        setup = "echo setup-b >> hooks"
        cleanup = "echo cleanup-b >> hooks"
        """)
    )
    return path


def small_pipe() -> tuple[int, int]:
    """A pipe of one page: a report larger than that blocks cutaway in its write until the
    test reads, so a signal can be sent while it reports."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    return read_end, write_end


def stored_status(db: Path) -> str | None:
    if not db.exists():
        return None
    with contextlib.closing(sqlite3.connect(db, timeout=30)) as connection:
        try:
            row = connection.execute("SELECT status FROM experiments").fetchone()
        except sqlite3.OperationalError:  # not yet made
            return None
    return None if row is None else str(row[0])


def wait_until(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never happened")
        time.sleep(0.05)


def hooks_balanced(tmp_path: Path) -> list[str]:
    """The hooks that ran, after checking that every setup that began was cleaned up, the
    cleanups in reverse order."""
    ran = (tmp_path / "hooks").read_text().split()
    for attempt in " ".join(ran).split("setup-a")[1:]:  # one attempt per run of cutaway
        words = ["setup-a", *attempt.split()]
        setups = [w.removeprefix("setup-") for w in words if w.startswith("setup-")]
        cleanups = [w.removeprefix("cleanup-") for w in words if w.startswith("cleanup-")]
        assert cleanups == setups[::-1], ran
    return ran


@pytest.mark.parametrize("stop", STOPS)
@pytest.mark.parametrize("phase", PHASES)
def test_a_stop_in_any_phase_cleans_up_keeps_the_store_intact_and_resumes(
    tmp_path: Path, phase: str, stop: str
) -> None:
    path = phased_experiment(tmp_path)
    db = tmp_path / ".cutaway" / "cutaway.db"
    if phase != "report":
        (tmp_path / f"slow-{phase}").touch()
    read_end, write_end = small_pipe()
    process = subprocess.Popen(
        [*CUTAWAY, "run", str(path), "--all-metrics"],
        cwd=tmp_path,
        text=True,
        stdout=write_end,
        stderr=subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )
    os.close(write_end)
    try:
        if phase == "report":
            wait_until(lambda: stored_status(db) == "complete", "the end of the rounds")
            time.sleep(1.0)  # the report fills the pipe and waits
            assert process.poll() is None, "the report should be blocked on its pipe"
        else:
            marker = {"setup": "setup-started", "hook": "prepare-started", "round": "measuring"}
            wait_for(tmp_path / marker[phase])
            time.sleep(0.2)
        for number, stop_signal in enumerate(STOPS[stop]):
            if number:
                time.sleep(0.5)
            process.send_signal(stop_signal)
        with os.fdopen(read_end, "rb") as report:
            report.read()  # unblock a report that was waiting for the pipe
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 128 + STOPS[stop][0], stderr
    assert "Traceback" not in stderr, stderr
    hooks = hooks_balanced(tmp_path)
    assert hooks[0] == "setup-a" and ("setup-b" in hooks) is (phase != "setup")
    for seconds in (97, 3, 5):
        assert leftovers(sleeper(tmp_path, seconds)) == ""
    with contextlib.closing(sqlite3.connect(db)) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    for marker in tmp_path.glob("slow-*"):
        marker.unlink()
    resume = subprocess.run(
        [*CUTAWAY, "run", "--resume", "1", "-q"], cwd=tmp_path, capture_output=True, text=True
    )
    if phase == "report":  # stopped after every run was stored: nothing to resume
        assert "interrupted during the report; stored as #1" in stderr, stderr
        assert stored_status(db) == "complete"
        assert resume.returncode == 2 and "nothing to resume" in resume.stderr, resume.stderr
    else:
        assert resume.returncode == 0, resume.stderr
        assert stored_status(db) == "complete"
        hooks_balanced(tmp_path)
    with contextlib.closing(sqlite3.connect(db)) as connection:
        (ok_runs,) = connection.execute("SELECT COUNT(*) FROM runs WHERE status = 'ok'").fetchone()
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert ok_runs == 2 * ROUNDS


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_an_interrupted_instructions_run_leaves_no_gdbserver_pipes(tmp_path: Path) -> None:
    """valgrind's gdbserver FIFOs (/tmp/vgdb-pipe-*) stay when valgrind is killed: the
    instructions probe runs it without one."""
    hung = sleeper(tmp_path, 30)
    process = subprocess.Popen(
        [*CUTAWAY, "run", "-c", hung, "-c", hung, "--rounds", "1", "--warmup", "0",
         "--instructions"],
        cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        valgrind_pid = ""
        deadline = time.monotonic() + 120
        while not valgrind_pid:  # the first untimed run, under valgrind
            assert time.monotonic() < deadline and process.poll() is None
            found = subprocess.run(["pgrep", "-f", f"callgrind.*{hung}"], capture_output=True)
            valgrind_pid = found.stdout.decode().split("\n")[0].strip()
            time.sleep(0.1)
        time.sleep(1.0)  # valgrind has started its tool
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    pipes = list(Path(tempfile.gettempdir()).glob(f"vgdb-pipe-*-{valgrind_pid}-*"))
    assert pipes == [], pipes


# -- the cleanup hooks: the first interrupt lets them end, another stops them -------------------


def cleanup_experiment(tmp_path: Path, cleanup_a: str, cleanup_b: str, rounds: int = 200) -> Path:
    """Two variants whose cleanups run in reverse order: b's, then a's."""
    path = tmp_path / "experiment.toml"
    path.write_text(
        textwrap.dedent(f"""\
        name = "cleanups"
        rounds = {rounds}
        warmup_rounds = 0
        [[variants]]
        name = "a"
        command = "sleep 0.02"
        setup = "touch measuring"
        cleanup = "{cleanup_a}"
        [[variants]]
        name = "b"
        command = "sleep 0.02"
        cleanup = "{cleanup_b}"
        """)
    )
    return path


def test_the_first_interrupt_lets_every_cleanup_run_to_its_end_and_says_so(
    tmp_path: Path,
) -> None:
    """Ctrl-C while measuring stops the measuring; the cleanups restore the system, so they
    run to their end, announced with what another interrupt would do. SIGINT and SIGTERM sent
    together count as one stop: neither was told what a second one does."""
    path = cleanup_experiment(
        tmp_path, "sleep 1; echo a >> cleaned", "touch b-started; sleep 1; echo b >> cleaned"
    )
    process = start(path, tmp_path)
    wait_for(tmp_path / "measuring")
    time.sleep(0.5)
    # Together: both pending when it runs again (sent one after the other to a running
    # process, the second may come late on a busy machine, once the first is acted on).
    process.send_signal(signal.SIGSTOP)
    process.send_signal(signal.SIGINT)
    process.send_signal(signal.SIGTERM)
    process.send_signal(signal.SIGCONT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert (tmp_path / "cleaned").read_text().split() == ["b", "a"], stderr
    assert (
        "interrupted: running the cleanup hooks of 'a', 'b' first (another interrupt stops them)"
        in stderr
    )
    assert "not cleaned up" not in stderr
    assert status_of_latest(tmp_path) == "incomplete"


def test_an_interrupt_during_the_last_cleanup_lets_it_end_and_says_so(tmp_path: Path) -> None:
    """The runs are over and the cleanups run when Ctrl-C comes: the cleanup is not abandoned
    half way; it ends, and the command exits 130."""
    path = cleanup_experiment(
        tmp_path,
        "echo a >> cleaned",
        "touch b-started; sleep 2; echo b >> cleaned",
        rounds=2,
    )
    process = start(path, tmp_path)
    wait_for(tmp_path / "b-started")
    time.sleep(0.7)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert (tmp_path / "cleaned").read_text().split() == ["b", "a"], stderr
    assert (
        "interrupted: the cleanup hook of 'b' runs to its end first, and every cleanup after it "
        "(another interrupt stops them)" in stderr
    )


def test_another_interrupt_stops_the_cleanup_and_names_what_was_not_cleaned_up(
    tmp_path: Path,
) -> None:
    """A cleanup that hangs must not hang cutaway: the interrupt after the announcement stops
    the running cleanup's process group within a second, runs no cleanup after it, exits with
    the first signal's status and names each cleanup stopped or not run."""
    hung_a, hung_b = sleeper(tmp_path, 30), sleeper(tmp_path, 31)
    path = cleanup_experiment(tmp_path, hung_a, f"touch b-started; {hung_b}")
    process = start(path, tmp_path)
    wait_for(tmp_path / "measuring")
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    wait_for(tmp_path / "b-started")
    time.sleep(0.3)
    process.send_signal(signal.SIGTERM)
    stopped_at = time.monotonic()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr  # the first signal's
    assert time.monotonic() - stopped_at < 20, stderr  # not the hooks' 30 s (no speed asserted)
    assert leftovers(hung_b) == ""
    assert leftovers(hung_a) == ""  # never started
    assert (
        "not cleaned up (another interrupt stopped the cleanup): "
        f"variant 'b': cleanup hook `touch b-started; {hung_b}` was stopped half way; "
        f"variant 'a': cleanup hook `{hung_a}` did not run; what they restore is left as it is"
    ) in stderr
    assert status_of_latest(tmp_path) == "incomplete"
