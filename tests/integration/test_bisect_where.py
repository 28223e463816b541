"""`cutaway bisect` says where the first bad commit's difference went: a repository generated
here, whose commit 3 makes one function (`planted_slowdown`) do three times the work. The
search counts instructions (valgrind: deterministic); once the commit is found, it is profiled
against its parent with perf, and the answer names that function first, in the terminal, the
Markdown summary and the JSON, with the differential flame graph beside the summary."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_bisect import assert_cleaned_up, bisect, git

pytestmark = pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("perf") is None,
    reason="needs valgrind and perf",
)
BUILD = "cc -O1 -fno-omit-frame-pointer -o prog prog.c"


def program(planted: int, number: int) -> str:
    return (
        "#include <stdio.h>\n"
        "__attribute__((noinline)) double steady_work(long n) {\n"
        "  double s = 0; for (long i = 0; i < n; i++) s += i * 0.5 / (i + 1); return s; }\n"
        "__attribute__((noinline)) double planted_slowdown(long n) {\n"
        "  double s = 0; for (long i = 0; i < n; i++) s += i * 0.25 / (i + 3); return s; }\n"
        f'int main(void) {{ printf("%f\\n", steady_work(2000000) + planted_slowdown({planted}));\n'
        f"  return 0; }} /* commit {number} */\n"
    )


def make_repository(directory: Path, commits: int, first_bad: int) -> list[str]:
    directory.mkdir()
    git(directory, "init", "-q")
    git(directory, "config", "user.email", "test@example.com")
    git(directory, "config", "user.name", "test")
    for number in range(commits):
        planted = 3_000_000 if number >= first_bad else 1_000_000
        (directory / "prog.c").write_text(program(planted, number))
        git(directory, "add", "prog.c")
        git(directory, "commit", "-q", "-m", f"commit {number}")
    return git(directory, "rev-list", "--reverse", "HEAD").split()


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "tmp").mkdir()
    return tmp_path


def test_the_first_bad_commit_is_profiled_and_the_function_named(work: Path) -> None:
    repository = work / "repo"
    hashes = make_repository(repository, 5, first_bad=3)
    result = bisect(
        hashes[0], hashes[-1], "--repo", str(repository), "--build", BUILD, "--instructions",
        "--summary", "bisect.md", "--export-json", "bisect.json", "--db", "b.db", "--",
        "./prog", cwd=work, explain=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert hashes[3] in result.stdout.splitlines()
    assert f"where {hashes[3][:12]} went (on-cpu): planted_slowdown" in result.stdout
    summary = (work / "bisect.md").read_text(encoding="utf-8")
    assert f"First bad commit: `{hashes[3]}`" in summary
    rows = [line for line in summary.splitlines() if line.startswith("| `")]
    assert rows and rows[0].startswith("| `planted_slowdown`"), summary
    svg = work / f"bisect.{hashes[3][:12]}.flamegraph-diff.svg"
    assert f"`{svg.name}`" in summary and svg.exists()
    document = json.loads((work / "bisect.json").read_text(encoding="utf-8"))
    assert isinstance(document["where_experiment"], int)
    assert_cleaned_up(work, repository)


def test_explain_none_profiles_nothing(work: Path) -> None:
    repository = work / "repo"
    hashes = make_repository(repository, 3, first_bad=2)
    result = bisect(
        hashes[0], hashes[-1], "--repo", str(repository), "--build", BUILD, "--instructions",
        "--explain", "none", "--export-json", "bisect.json", "--db", "b.db", "--", "./prog",
        cwd=work,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "went (on-cpu)" not in result.stdout
    assert json.loads((work / "bisect.json").read_text())["where_experiment"] is None
    assert_cleaned_up(work, repository)
