"""`cutaway check` says where a regression went: a C program compiled here, whose candidate
does three times the work in one function (`planted_slowdown`), fails the gate; the Markdown
summary names that function first, with its interval and share, and links the differential
flame graph written beside it. Real perf, real runs."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.cutaway_command import CUTAWAY, cutaway, environment

pytestmark = pytest.mark.skipif(shutil.which("perf") is None, reason="needs perf (linux-perf)")

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) double steady_work(long n) {
    double s = 0; for (long i = 0; i < n; i++) s += i * 0.5 / (i + 1); return s; }
__attribute__((noinline)) double planted_slowdown(long n) {
    double s = 0; for (long i = 0; i < n; i++) s += i * 0.25 / (i + 3); return s; }
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    printf("%f\n", steady_work(4000000) + planted_slowdown(n));
    return 0; }
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("where")
    (directory / "where.c").write_text(PROGRAM)
    binary = directory / "where"
    subprocess.run(
        ["cc", "-O1", "-fno-omit-frame-pointer", "-o", str(binary), str(directory / "where.c")],
        check=True,
    )
    return binary


def check(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return cutaway("check", *args, cwd=cwd, env={"GITHUB_STEP_SUMMARY": ""})


def _experiments(cwd: Path) -> list[str]:
    with sqlite3.connect(cwd / ".cutaway" / "cutaway.db") as db:
        names = [row[0] for row in db.execute("SELECT name FROM experiments ORDER BY id")]
    db.close()
    return names


def test_a_failed_gate_profiles_and_names_the_slowed_function(
    program: Path, tmp_path: Path
) -> None:
    result = check(
        "-n", "base", "-c", f"{program} 1000000", "-n", "cand", "-c", f"{program} 3000000",
        "--fail-on", "wall=5%", "--summary", "summary.md", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "### cutaway check: ❌ regression" in summary
    where = summary[summary.index("#### Where it went") :]
    assert "From a profiled experiment run after the gate" in where
    rows = [line for line in where.splitlines() if line.startswith("| `")]
    assert rows and rows[0].startswith("| `planted_slowdown`"), where
    assert "Explained: largest 1" in where
    [svg] = [p.name for p in tmp_path.glob("summary.*.flamegraph-diff.svg")]
    assert f"`{svg}`" in where
    assert (tmp_path / svg).read_text(encoding="utf-8").lstrip().startswith("<?xml")
    assert "check: where cand went (on-cpu): planted_slowdown" in result.stdout
    assert _experiments(tmp_path)[-1].endswith(" (where)")


def test_a_profiled_check_attributes_from_its_own_runs(program: Path, tmp_path: Path) -> None:
    result = check(
        "-n", "base", "-c", f"{program} 1000000", "-n", "cand", "-c", f"{program} 3000000",
        "--fail-on", "wall=5%", "--profile", "--summary", "summary.md", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    where = (tmp_path / "summary.md").read_text(encoding="utf-8").split("#### Where it went")[1]
    assert "From a profiled experiment" not in where
    rows = [line for line in where.splitlines() if line.startswith("| `")]
    assert rows[0].startswith("| `planted_slowdown`"), where
    assert len(_experiments(tmp_path)) == 1  # no second experiment


def test_explain_none_and_a_passing_gate_add_nothing(program: Path, tmp_path: Path) -> None:
    result = check(
        "-n", "base", "-c", f"{program} 1000000", "-n", "cand", "-c", f"{program} 3000000",
        "--fail-on", "wall=5%", "--explain", "none", "--summary", "summary.md", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    assert "Where it went" not in (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert len(_experiments(tmp_path)) == 1


def test_an_interrupt_while_the_gate_profiles_ends_the_check_as_interrupted(
    program: Path, tmp_path: Path
) -> None:
    """SIGTERM during the profiled experiment run after a failed gate: the check exits 143
    (128 + SIGTERM), as every interrupted command does; it exited 1, the gate's failure, as if
    it had not been asked to stop (found by a hostile re-run). The candidate sends the signal
    from its first run under perf, the profiled experiment's."""
    pid_file = tmp_path / "cutaway.pid"
    candidate = (
        f'case "$(cat /proc/$PPID/comm)" in perf*) kill -TERM $(cat {pid_file});; esac; '
        f"exec {program} 3000000"
    )
    process = subprocess.Popen(
        [*CUTAWAY, "check", "--shell", "-n", "base", "-c", f"{program} 1000000",
         "-n", "cand", "-c", candidate, "--fail-on", "wall=5%", "--summary", "summary.md"],
        cwd=tmp_path, env=environment({"GITHUB_STEP_SUMMARY": ""}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    pid_file.write_text(str(process.pid))
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 143, stderr
    assert "cutaway: interrupted" in stderr
    assert _experiments(tmp_path)[-1].endswith(" (where)")
