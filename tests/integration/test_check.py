"""`cutaway check` end to end with real commands: the exit statuses (0 pass, 1 fail, 2 bad
input, 3 inconclusive), the Markdown summary and $GITHUB_STEP_SUMMARY, and the result stored.
The regression is made deterministic (instructions counted by valgrind, 30 % more work), so
that no test depends on wall-clock speed."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest

from tests.cutaway_command import CUTAWAY

needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None, reason="needs valgrind (Debian: valgrind)"
)
PROGRAM = r"""
#include <stdlib.h>
int main(int argc, char **argv) {
    volatile unsigned long sink = 0;
    unsigned long n = strtoul(argv[1], 0, 10);
    for (unsigned long i = 0; i < n; i++) sink += i;
    return 0; }
"""


def check(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "NO_COLOR": "1", **(env or {})}
    environment.pop("GITHUB_STEP_SUMMARY", None)
    environment.update(env or {})
    return subprocess.run(
        [*CUTAWAY, "check", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
    )


@pytest.fixture
def loop(tmp_path: Path) -> Path:
    source = tmp_path / "loop.c"
    source.write_text(PROGRAM)
    binary = tmp_path / "loop"
    subprocess.run(["cc", "-O1", "-o", str(binary), str(source)], check=True)
    return binary


@needs_valgrind
def test_the_same_program_passes_the_gate_on_counted_instructions(
    tmp_path: Path, loop: Path
) -> None:
    result = check(
        "-c", f"{loop} 200000", "-c", f"{loop} 200000", "--instructions",
        "--summary", "summary.md", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "check: pass" in result.stdout
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("### cutaway check: ✅ no regression")
    assert "`instructions`" in summary and "✅ pass" in summary


@needs_valgrind
def test_thirty_percent_more_work_fails_the_gate_and_says_so_in_the_step_summary(
    tmp_path: Path, loop: Path
) -> None:
    step_summary = tmp_path / "step-summary.md"
    step_summary.write_text("earlier step\n")
    result = check(
        "-c", f"{loop} 200000", "-n", "main", "-c", f"{loop} 260000", "-n", "pull request",
        "--instructions", "--fail-on", "instructions=5%", "--db", "gate.db", cwd=tmp_path,
        env={"GITHUB_STEP_SUMMARY": str(step_summary)},
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "check: fail" in result.stdout
    text = step_summary.read_text()
    assert text.startswith("earlier step\n### cutaway check: ❌ regression")  # appended
    assert "`pull request`" in text and "+5.00 %" in text and "❌ fail" in text
    # Stored as `run` stores: the experiment, complete, with both variants' runs.
    with sqlite3.connect(tmp_path / "gate.db") as db:
        (status,) = db.execute("SELECT status FROM experiments").fetchone()
        variants = {name for (name,) in db.execute("SELECT DISTINCT variant FROM runs")}
    assert status == "complete" and variants == {"main", "pull request"}


def test_a_budget_too_small_for_an_interval_is_inconclusive(tmp_path: Path) -> None:
    result = check(
        "-c", "true", "-c", "true", "--rounds", "2", "--max-rounds", "2", "--summary", "s.md",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "check: inconclusive" in result.stdout
    assert "budget of 2 rounds" in result.stdout
    assert "⚠️ inconclusive" in (tmp_path / "s.md").read_text()


def test_a_candidate_that_fails_fails_the_check(tmp_path: Path) -> None:
    result = check("-c", "true", "-c", "false", cwd=tmp_path)
    assert result.returncode == 1
    assert "variant 'false' failed" in result.stderr


def test_the_check_table_of_an_experiment_file_is_the_gate(tmp_path: Path) -> None:
    (tmp_path / "gate.toml").write_text(
        'name = "gate"\ncommand = "true"\nrounds = 2\n'
        '[[variants]]\nname = "main"\n[[variants]]\nname = "branch"\n'
        '[check]\nfail_on = { cpu = "3%" }\nmax_rounds = 2\n'
    )
    result = check("gate.toml", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert "check cpu of branch" in result.stdout
    # `run` reads the same file: the [check] table is no error there.
    ran = subprocess.run([*CUTAWAY, "run", "gate.toml"], cwd=tmp_path, capture_output=True)
    assert ran.returncode == 0, ran.stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["-c", "true"], "give two -c commands"),
        (["-c", "true", "-c", "true", "--fail-on", "wall"], "--fail-on: expected METRIC=PERCENT"),
        (["-c", "true", "-c", "true", "--fail-on", "rps=2%"], 'does not measure "rps"'),
        (["-c", "true", "-c", "true", "--rounds", "9", "--max-rounds", "3"], "--max-rounds"),
        (["-c", "true", "-c", "true", "--resume"], "unrecognized argument --resume"),
        (["nothing.toml"], "nothing.toml: no such file"),
    ],
)
def test_bad_input_exits_2_before_anything_runs(
    tmp_path: Path, arguments: list[str], message: str
) -> None:
    result = check(*arguments, "--db", "gate.db", cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert not (tmp_path / "gate.db").exists()


def test_a_bad_check_table_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "gate.toml").write_text(
        'name = "gate"\ncommand = "true"\n[[variants]]\nname = "a"\n[[variants]]\nname = "b"\n'
        '[check]\nfail_on = { wall = "2%" }\nfail_of = 3\n'
    )
    result = check("gate.toml", "--db", "gate.db", cwd=tmp_path)
    assert result.returncode == 2
    assert "gate.toml:9: check.fail_of: unknown key" in result.stderr


# A check that measures `touch ran` twice: whether anything was measured shows in the directory.
MEASURED = ("-c", "touch ran", "-c", "touch ran", "--rounds", "2", "--max-rounds", "2")


def test_a_step_summary_that_would_damage_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    """$GITHUB_STEP_SUMMARY is checked as every output file is: never the store, the
    experiment's --input, a directory, or the file --summary replaces."""
    made = subprocess.run([*CUTAWAY, "run", "-c", "true", "--rounds", "2", "--db", "gate.db"],
                          cwd=tmp_path, capture_output=True, timeout=300)  # fmt: skip
    assert made.returncode == 0, made.stderr
    store = (tmp_path / "gate.db").read_bytes()
    (tmp_path / "directory").mkdir()
    (tmp_path / "in.txt").write_text("input\n")
    variable = "$GITHUB_STEP_SUMMARY"
    cases = [
        ("gate.db", [], f"{variable} 'gate.db' would append to the store (--db)"),
        ("in.txt", ["--input", "in.txt"], f"{variable} 'in.txt' would append to the --input file"),
        ("directory", [], f"{variable} 'directory': is a directory, not a file"),
        ("s.md", ["--summary", "s.md"], f"{variable} 's.md' names the same file as --summary"),
    ]
    for path, options, message in cases:
        result = check(
            *MEASURED, *options, "--db", "gate.db", cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": path}
        )
        assert result.returncode == 2, (path, result.stderr)
        assert message in result.stderr, path
        assert not (tmp_path / "ran").exists(), path  # nothing was measured
    assert (tmp_path / "gate.db").read_bytes() == store  # nor stored, nor damaged
    assert (tmp_path / "in.txt").read_text() == "input\n"
    assert not (tmp_path / "s.md").exists()


def test_a_step_summary_fifo_that_nobody_reads_does_not_hang_the_check(tmp_path: Path) -> None:
    """Opened without waiting for a reader: with none, a warning, and the verdict stands (a
    check that waited for ever would meet the timeout)."""
    fifo = tmp_path / "summary.fifo"
    os.mkfifo(fifo)
    environment = {**os.environ, "NO_COLOR": "1", "GITHUB_STEP_SUMMARY": str(fifo)}
    result = subprocess.run(
        [*CUTAWAY, "check", *MEASURED],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )
    assert result.returncode == 3, result.stderr  # inconclusive in two rounds, as without it
    assert f"cannot append to $GITHUB_STEP_SUMMARY '{fifo}': a FIFO that nobody reads" in (
        result.stderr
    )
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_step_summary_on_a_device_or_a_fifo_with_a_reader_is_written_through(
    tmp_path: Path,
) -> None:
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    result = check(*MEASURED, cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": str(null)})
    assert result.returncode == 3, result.stderr
    status = os.lstat(null)
    assert stat.S_ISCHR(status.st_mode) and status.st_rdev == os.makedev(1, 3)
    fifo = tmp_path / "summary.fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    result = check(*MEASURED, cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": str(fifo)})
    assert result.returncode == 3, result.stderr
    received, _ = reader.communicate(timeout=60)
    assert received.startswith("### cutaway check: ⚠️ inconclusive"), received
