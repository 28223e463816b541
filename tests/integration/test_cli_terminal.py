"""The real `cutaway` command and the terminal: hostile names and a failing command's stderr never
reach it raw (tests/hostile.py), a reader that goes away loses no measurement, and a terminal
that reports 0 columns gets the report at 80."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import sqlite3
import struct
import subprocess
import termios
import time
import tty
from pathlib import Path

import pytest
from hostile import HOSTILE, raw_controls

from cutaway.model import RunStatus
from cutaway.store import Store
from tests.cutaway_command import CUTAWAY, cutaway

ENV = {**os.environ, "NO_COLOR": "1"}
SGR = re.compile(r"\x1b\[[0-9;]*m")  # rich's own colours on a terminal


def toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes (\\uXXXX, \\n, \\") are all valid TOML, and TOML
    wants DEL escaped too."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def hostile_experiment(tmp_path: Path, *, first_run_fails: bool = False) -> Path:
    """Every hostile string is a variant's name, the experiment's name holds two of them; one
    variant fails a counted run (or its first) printing every hostile string on stderr, and a
    conclude hook fails printing them too."""
    (tmp_path / "hostile.txt").write_text("\n".join(HOSTILE))
    fails = (
        "cat hostile.txt >&2; exit 3"
        if first_run_fails  # else only its second run: the first counted one (warmup = 1)
        else "n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count; "
        '[ "$n" != 1 ] || { cat hostile.txt >&2; exit 3; }'
    )
    lines = [
        f"name = {toml_string(HOSTILE[0] + ' ' + HOSTILE[-1])}",
        "rounds = 2",
        "warmup_rounds = 1",
    ]
    for index, name in enumerate(HOSTILE):
        command = '"true"'
        if index == len(HOSTILE) - 1:
            command = f'["sh", "-c", {toml_string(fails)}]'
        lines += ["[[variants]]", f"name = {toml_string(name)}", f"command = {command}"]
        if index == 1:
            lines.append(f"conclude = {toml_string('cat hostile.txt; exit 4')}")
    path = tmp_path / "hostile.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def assert_shown_escaped(text: str) -> None:
    assert raw_controls(text) == [], text
    assert "\\x1b[2J\\x1b]0;pwned\\x07" in text


def test_run_list_and_report_show_hostile_names_and_stderr_escaped(tmp_path: Path) -> None:
    path = hostile_experiment(tmp_path)
    run = cutaway("run", str(path), "--label", HOSTILE[-1], cwd=tmp_path)
    assert run.returncode == 1, run.stderr  # one counted run failed
    assert "counted run(s) failed" in run.stderr
    for text in (run.stdout, run.stderr):
        assert_shown_escaped(text)
    # The failed run's stderr tail and the conclude hook's output, each in one notice.
    assert "failed: exit status 3: \\x1b[31mred" in run.stderr
    assert (
        "conclude hook `cat hostile.txt; exit 4` exited with status 4: \\x1b[31mred" in run.stderr
    )
    assert "[bold red]x[/]" in run.stderr and ":warning:" in run.stderr
    for args in (["list"], ["report"], ["report", "--all-metrics"], ["compare", "1", "1"]):
        shown = cutaway(*args, cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        assert_shown_escaped(shown.stdout + shown.stderr)
    assert "[bold red]x[/]" in cutaway("list", cwd=tmp_path).stdout


def test_a_first_run_failure_shows_the_commands_stderr_escaped(tmp_path: Path) -> None:
    run = cutaway("run", str(hostile_experiment(tmp_path, first_run_fails=True)), cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert "failed on its first run" in run.stderr or "failed on its warmup run" in run.stderr
    assert_shown_escaped(run.stdout + run.stderr)
    assert "exit status 3: \\x1b[31mred\\x1b[0m\\x1b]0;title\\x07\n" in run.stderr  # lines kept


def test_a_failing_setup_hook_shows_its_output_escaped(tmp_path: Path) -> None:
    (tmp_path / "hostile.txt").write_text("\n".join(HOSTILE))
    run = cutaway(
        "run", "-c", "true", "-c", "true", "-n", HOSTILE[-1], "-n", HOSTILE[0],
        "--setup", "cat hostile.txt; exit 5", "--rounds", "2", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr
    assert "setup hook `cat hostile.txt; exit 5`" in run.stderr
    assert_shown_escaped(run.stdout + run.stderr)


# -- a terminal: a pty whose size we choose


def on_pty(
    args: list[str], cwd: Path, *, columns: int, rows: int, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Run cutaway with its stdout on a pseudo-terminal of ``columns`` x ``rows`` (raw: no
    newline translation); returns its status, what the terminal received and its stderr."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    tty.setraw(terminal)
    with open(cwd / "stderr.txt", "w+") as stderr:
        process = subprocess.Popen(
            [*CUTAWAY, *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=terminal,
            stderr=stderr,
            env=env or ENV,
        )
        os.close(terminal)
        received = _read_all(controller, time.monotonic() + 180)
        status = process.wait(timeout=60)
        stderr.seek(0)
        return status, received, stderr.read()


def _read_all(controller: int, deadline: float) -> str:
    chunks = []
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 1.0)
            if not ready:
                continue
            try:
                data = os.read(controller, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(controller)
    return b"".join(chunks).decode()


def test_machine_formats_on_a_terminal_show_control_characters_escaped(tmp_path: Path) -> None:
    """CSV and Markdown keep names exactly in a file or a pipe; on a terminal they are shown."""
    run = cutaway("run", str(hostile_experiment(tmp_path)), cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    for args in (
        ["report", "--format", "csv"],
        ["export", "--format", "runs-csv"],
        ["export", "--format", "runs-csv", "-o", "/dev/stdout"],  # written through: the same
    ):
        status, received, stderr = on_pty(args, tmp_path, columns=100, rows=40)
        assert status == 0, stderr
        assert raw_controls(SGR.sub("", received)) == [], args
        assert "\\x1b[2J\\x1b]0;pwned\\x07" in received
    piped = cutaway("export", "--format", "runs-csv", cwd=tmp_path)
    assert "\x1b[2J\x1b]0;pwned\x07" in piped.stdout  # a pipe gets the names as they are


# -- a reader that goes away


def _counted(db: Path) -> tuple[str, int, int]:
    """The latest experiment's status and its runs: (status, all runs, successful ones)."""
    with Store(db, create=False) as store:
        row = store.list_experiments()[0]
        runs = store.runs(row.id)
        return row.status, len(runs), sum(run.status is RunStatus.OK for run in runs)


RUN = ["run", "-c", "true", "-c", "sleep 0.005", "--rounds", "3", "--warmup", "1"]
HOOKS = ["--setup", "echo setup >> hooks", "--cleanup", "echo cleanup >> hooks"]


@pytest.mark.parametrize("style", ["auto", "full"])
def test_a_pipe_closed_before_the_first_line_loses_nothing(tmp_path: Path, style: str) -> None:
    reader, writer = os.pipe()
    os.close(reader)  # nobody will ever read: every write fails with EPIPE
    try:
        status = subprocess.run(
            [*CUTAWAY, *RUN, *HOOKS, "--style", style],
            cwd=tmp_path,
            stdout=writer,
            stderr=writer,
            env=ENV,
            timeout=180,
        ).returncode
    finally:
        os.close(writer)
    assert status == 0
    assert _counted(tmp_path / ".cutaway" / "cutaway.db") == ("complete", 8, 8)
    assert (tmp_path / "hooks").read_text().split() == ["setup", "setup", "cleanup", "cleanup"]


def test_a_closed_stdout_is_said_on_stderr_and_loses_nothing(tmp_path: Path) -> None:
    reader, writer = os.pipe()
    os.close(reader)
    try:
        run = subprocess.run(
            [*CUTAWAY, *RUN, *HOOKS],
            cwd=tmp_path,
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
            timeout=180,
        )
    finally:
        os.close(writer)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "Exception ignored" not in run.stderr
    assert "standard output was closed" in run.stderr
    assert "stored as #1" in run.stderr
    assert _counted(tmp_path / ".cutaway" / "cutaway.db") == ("complete", 8, 8)


def test_a_run_started_with_stdout_and_stderr_closed_loses_nothing(tmp_path: Path) -> None:
    """`cutaway run ... >&- 2>&-`: the store must not take descriptor 1 or 2 and get output."""
    command = " ".join(f"'{word}'" for word in [*CUTAWAY, *RUN, *HOOKS, "--show-output"])
    closed = subprocess.run(["bash", "-c", f"{command} >&- 2>&-"], cwd=tmp_path, timeout=180)
    assert closed.returncode == 0
    db = tmp_path / ".cutaway" / "cutaway.db"
    assert _counted(db) == ("complete", 8, 8)
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert (tmp_path / "hooks").read_text().split() == ["setup", "setup", "cleanup", "cleanup"]


def test_head_reading_two_lines_of_a_run_loses_nothing(tmp_path: Path) -> None:
    """The issue's own case: `cutaway run ... 2>&1 | head -2`."""
    command = " ".join(f"'{word}'" for word in [*CUTAWAY, *RUN, *HOOKS])
    shell = f"{command} 2>&1 | head -2; echo ${{PIPESTATUS[0]}} > status"
    shown = subprocess.run(
        ["bash", "-c", shell], cwd=tmp_path, capture_output=True, text=True, env=ENV, timeout=180
    )
    assert len(shown.stdout.splitlines()) == 2
    assert (tmp_path / "status").read_text().strip() == "0"
    assert _counted(tmp_path / ".cutaway" / "cutaway.db") == ("complete", 8, 8)
    assert (tmp_path / "hooks").read_text().split() == ["setup", "setup", "cleanup", "cleanup"]


# -- a terminal that reports 0 columns


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """A store with one small complete experiment."""
    run = cutaway("run", "-c", "true", "-c", "sleep 0.005", "--rounds", "3", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    return tmp_path


@pytest.mark.parametrize("env", [ENV, {**ENV, "COLUMNS": "0"}], ids=["pty", "pty-COLUMNS=0"])
def test_a_terminal_of_zero_columns_gets_the_report_at_80(
    stored: Path, env: dict[str, str]
) -> None:
    status, received, stderr = on_pty(["report"], stored, columns=0, rows=0, env=env)
    assert status == 0, stderr
    lines = received.splitlines()
    assert any("sleep 0.005" in line for line in lines), received
    assert len(lines) > 10 and max(len(line) for line in lines) <= 80


def test_run_on_a_terminal_of_zero_columns_prints_its_report(tmp_path: Path) -> None:
    status, received, stderr = on_pty(
        ["run", "-c", "true", "-c", "sleep 0.005", "--rounds", "3"], tmp_path, columns=0, rows=0
    )
    assert status == 0, stderr
    assert "sleep 0.005" in received and max(map(len, received.splitlines())) <= 80


@pytest.mark.parametrize("quiet", [False, True])
def test_quiet_draws_no_progress_bar_on_a_terminal(tmp_path: Path, quiet: bool) -> None:
    """-q means nothing on stderr but errors, the progress bar included, also on a terminal."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    args = ["run", "-c", "sleep 0.02", "--rounds", "8", *(["-q"] if quiet else [])]
    process = subprocess.Popen(
        [*CUTAWAY, *args],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=terminal,
        env=ENV,
    )
    os.close(terminal)
    received = _read_all(controller, time.monotonic() + 120)
    assert process.wait(timeout=60) == 0
    if quiet:
        assert received == ""
    else:
        assert "\r" in received  # the bar, redrawn in place: what -q must not draw
