"""`cutaway check` end to end with real commands: the exit statuses (0 pass, 1 fail, 2 bad
input, 3 inconclusive), the Markdown summary and $GITHUB_STEP_SUMMARY, and the result stored.
The regression is made deterministic (instructions counted by valgrind, 30 % more work), so
that no test depends on wall-clock speed."""

from __future__ import annotations

import os
import shutil
import sqlite3
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
