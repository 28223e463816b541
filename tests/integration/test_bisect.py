"""`cutaway bisect` on git repositories generated here: each commit a small C program, one
commit adding work. The work is counted in instructions (valgrind), so the first bad commit
is found every time without depending on wall-clock speed. Also: a commit that does not build
is skipped, every worktree is removed (after Ctrl-C too), and bad input exits 2 saying why."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cutaway_command import CUTAWAY, cutaway

BUILD = "cc -O1 -o prog prog.c"
needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None, reason="needs valgrind (Debian: valgrind)"
)


def program(work: int, number: int) -> str:
    return (
        "int main(void) { volatile unsigned long s = 0;\n"
        f"  for (unsigned long i = 0; i < {work}UL; i++) s += i;\n"
        f"  return 0; }} /* commit {number} */\n"
    )


def git(repository: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repository), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def make_repository(
    directory: Path, commits: int, first_bad: int, broken: tuple[int, ...] = ()
) -> list[str]:
    """``commits`` commits of prog.c; from ``first_bad`` on, 25 % more work; the commits in
    ``broken`` do not compile. The full hashes, oldest first."""
    directory.mkdir()
    git(directory, "init", "-q")
    git(directory, "config", "user.email", "test@example.com")
    git(directory, "config", "user.name", "test")
    for number in range(commits):
        work = 125_000 if number >= first_bad else 100_000
        source = program(work, number)
        if number in broken:
            source = source.replace("return 0;", "return 0")  # a syntax error
        (directory / "prog.c").write_text(source)
        git(directory, "add", "prog.c")
        git(directory, "commit", "-q", "-m", f"commit {number}")
    return git(directory, "rev-list", "--reverse", "HEAD").split()


def bisect(
    *args: str, cwd: Path, timeout: float = 600, explain: bool = False
) -> subprocess.CompletedProcess[str]:
    """`cutaway bisect ARGS`; without ``explain``, with --explain none: these tests are about
    the search (test_bisect_where.py tests the profile of the first bad commit)."""
    quiet = [] if explain or "--" not in args else ["--explain", "none"]
    return cutaway(
        "bisect", *quiet, *args, cwd=cwd, timeout=timeout, env={"TMPDIR": str(cwd / "tmp")}
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "tmp").mkdir()
    return tmp_path


def assert_cleaned_up(work: Path, repository: Path) -> None:
    assert git(repository, "worktree", "list").count("\n") == 0  # the main one only
    assert list((work / "tmp").iterdir()) == []


@needs_valgrind
def test_the_commit_that_adds_work_is_found_and_a_broken_build_is_skipped(work: Path) -> None:
    repository = work / "repo"
    # 9 commits: 0 good, 8 bad; 4 (the first one tested) does not build; 6 adds the work.
    hashes = make_repository(repository, 9, first_bad=6, broken=(4,))
    result = bisect(
        hashes[0], hashes[-1], "--repo", str(repository), "--build", BUILD, "--instructions",
        "--export-json", "bisect.json", "--db", "b.db", "--", "./prog",
        cwd=work,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "first bad commit:"
    assert lines[1] == hashes[6]  # the full hash, on a line of its own
    assert lines[2].startswith("  instructions +")  # 25 % more loop, less the start-up
    assert "experiments" in lines[-1] and "minutes" in lines[-1]
    exported = json.loads((work / "bisect.json").read_text())
    assert exported["status"] == "found" and exported["first_bad"] == hashes[6]
    assert 1.1 < exported["ratio"] < 1.26
    verdicts = {entry["commit"]: entry["verdict"] for entry in exported["tested"]}
    assert verdicts[hashes[4]] == "skipped"
    assert verdicts[hashes[-1]] == "bad"  # BAD against GOOD, first
    assert all(
        verdicts[commit] == ("bad" if index >= 6 else "good")
        for index, commit in enumerate(hashes)
        if commit in verdicts and index != 4
    )
    skipped = next(e for e in exported["tested"] if e["verdict"] == "skipped")
    assert "the build failed" in skipped["message"] and "error" in skipped["message"]
    assert "skipped: the build failed" in result.stderr
    assert exported["experiments"] == len(exported["tested"]) - 1  # every test but the skip
    assert_cleaned_up(work, repository)


@needs_valgrind
def test_the_commit_right_after_good_is_found(work: Path) -> None:
    repository = work / "repo"
    hashes = make_repository(repository, 4, first_bad=1)
    result = bisect(
        hashes[0], "HEAD", "--repo", str(repository), "--build", BUILD, "--instructions",
        "--db", "b.db", "--", "./prog",
        cwd=work,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == hashes[1]
    assert_cleaned_up(work, repository)


def test_no_regression_between_good_and_bad_is_said_and_exits_1(work: Path) -> None:
    repository = work / "repo"
    hashes = make_repository(repository, 3, first_bad=99)
    # Counted the same at every commit: the instructions differ by nothing at all.
    if shutil.which("valgrind") is None:
        pytest.skip("needs valgrind (Debian: valgrind)")
    result = bisect(
        hashes[0], hashes[-1], "--repo", str(repository), "--build", BUILD, "--instructions",
        "--db", "b.db", "--", "./prog",
        cwd=work,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "is not worse than GOOD" in result.stdout and "nothing to bisect" in result.stdout
    assert_cleaned_up(work, repository)


def varying_program(offset: int, number: int) -> str:
    """A program whose work changes from run to run, the same way at every commit but for
    ``offset``: run k (counted in a file in its directory, so in each commit's worktree) does
    100,000 + 25,000 * ((3k + offset) mod 5) loop steps. Two commits with different offsets do
    the same work on average but not round by round, so the paired ratio's interval reaches
    across 1 at every look: the deterministic form of a change lost in the noise."""
    return (
        "#include <stdio.h>\n"
        'int main(void) { unsigned long k = 0; FILE *f = fopen("runs", "r");\n'
        '  if (f) { if (fscanf(f, "%lu", &k) != 1) k = 0; fclose(f); }\n'
        '  f = fopen("runs", "w"); if (f) { fprintf(f, "%lu\\n", k + 1); fclose(f); }\n'
        f"  unsigned long work = 100000UL + 25000UL * ((3 * k + {offset}) % 5);\n"
        "  volatile unsigned long s = 0;\n"
        "  for (unsigned long i = 0; i < work; i++) s += i;\n"
        f"  return 0; }} /* commit {number} */\n"
    )


@needs_valgrind
def test_a_bad_lost_in_the_noise_is_not_worse_exits_1_at_once_with_its_interval(
    work: Path,
) -> None:
    """BAD's interval against GOOD reaches across 1: BAD is not worse, said with that interval,
    after one test within its budget (no re-runs, no bisection), exit 1."""
    repository = work / "repo"
    repository.mkdir()
    git(repository, "init", "-q")
    git(repository, "config", "user.email", "test@example.com")
    git(repository, "config", "user.name", "test")
    for number, offset in enumerate((0, 0, 2)):
        (repository / "prog.c").write_text(varying_program(offset, number))
        git(repository, "add", "prog.c")
        git(repository, "commit", "-q", "-m", f"commit {number}")
    hashes = git(repository, "rev-list", "--reverse", "HEAD").split()
    result = bisect(
        hashes[0], hashes[-1], "--repo", str(repository), "--build", BUILD, "--instructions",
        "--max-rounds", "8", "--export-json", "bisect.json", "--db", "b.db", "--", "./prog",
        cwd=work,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        f"BAD {hashes[-1][:12]} is not worse than GOOD {hashes[0][:12]}: nothing to bisect"
    )
    assert lines[1].startswith("  instructions ") and "[" in lines[1]  # the change's interval
    assert "in 8 rounds" in lines[1]
    assert "the first bad commit is one of these" not in result.stdout
    exported = json.loads((work / "bisect.json").read_text())
    assert exported["status"] == "no-regression" and exported["first_bad"] is None
    assert exported["ci_low"] < 1.0 < exported["ci_high"]
    assert exported["experiments"] == 1 and exported["rounds"] == 8  # one budget, no re-run
    [tested] = exported["tested"]
    assert (tested["commit"], tested["verdict"]) == (hashes[-1], "not worse")
    assert_cleaned_up(work, repository)


@pytest.mark.parametrize(
    ("swap", "revisions", "message"),
    [
        (False, ("HEAD~2", "nosuchcommit"), "BAD 'nosuchcommit' names no commit"),
        (True, (), "is not an ancestor of BAD"),
        (False, ("HEAD", "HEAD"), "the same commit"),
    ],
)
def test_bad_commits_exit_2(
    work: Path, swap: bool, revisions: tuple[str, ...], message: str
) -> None:
    repository = work / "repo"
    hashes = make_repository(repository, 3, first_bad=2)
    good, bad = revisions or (hashes[-1], hashes[0])
    result = bisect(good, bad, "--repo", str(repository), "--db", "b.db", "--", "./prog", cwd=work)
    assert result.returncode == 2
    assert message in result.stderr
    assert_cleaned_up(work, repository)


def test_not_a_git_repository_exits_2(work: Path) -> None:
    (work / "plain").mkdir()
    result = bisect("HEAD~1", "HEAD", "--repo", str(work / "plain"), "--", "true", cwd=work)
    assert result.returncode == 2
    assert "is not in a git repository" in result.stderr


def test_good_that_does_not_build_exits_2_saying_so(work: Path) -> None:
    repository = work / "repo"
    hashes = make_repository(repository, 3, first_bad=2, broken=(0,))
    result = bisect(
        hashes[0], hashes[-1], "--repo", str(repository), "--build", BUILD, "--db", "b.db",
        "--", "./prog",
        cwd=work,
    )  # fmt: skip
    assert result.returncode == 2
    assert f"GOOD {hashes[0][:12]} cannot be measured: the build failed (exit status" in (
        result.stderr
    )
    assert_cleaned_up(work, repository)


def test_no_workload_is_bad_usage(work: Path) -> None:
    result = bisect("HEAD~1", "HEAD", cwd=work)
    assert result.returncode == 2
    assert "no workload" in result.stderr


def test_ctrl_c_removes_every_worktree(work: Path) -> None:
    repository = work / "repo"
    hashes = make_repository(repository, 3, first_bad=2)
    process = subprocess.Popen(
        [*CUTAWAY, "bisect", hashes[0], hashes[-1], "--repo", str(repository),
         "--build", BUILD, "--db", "b.db", "--", "sleep", "0.2"],
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "TMPDIR": str(work / "tmp")},
        # Started in the background by a shell without job control, the suite (and so every
        # child) would ignore SIGINT: Ctrl-C is what is tested here.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while git(repository, "worktree", "list").count("\n") < 2:  # GOOD's and BAD's
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    time.sleep(1.0)  # measuring
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr
    assert_cleaned_up(work, repository)


@pytest.mark.parametrize("stop", ["SIGTERM", "build-timeout"])
def test_a_build_stopped_by_a_signal_or_its_time_limit_leaves_nothing_running(
    work: Path, stop: str
) -> None:
    """The build's whole process group is stopped, not only its shell: a compiler it started
    must not go on under PID 1 in a worktree that is being removed."""
    repository = work / "repo"
    hashes = make_repository(repository, 3, first_bad=2)
    hung = f"sleep 97.{abs(hash(str(work))) % 10**6:06d}"
    build = f"touch {work}/building; {hung}; {BUILD}"  # the shell waits for its child
    timeout = ["--build-timeout", "1"] if stop == "build-timeout" else []
    process = subprocess.Popen(
        [*CUTAWAY, "bisect", hashes[0], hashes[-1], "--repo", str(repository),
         "--build", build, *timeout, "--db", "b.db", "--", "./prog"],
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "TMPDIR": str(work / "tmp")},
    )  # fmt: skip
    try:
        if stop == "SIGTERM":
            deadline = time.monotonic() + 60
            while not (work / "building").exists():
                assert time.monotonic() < deadline and process.poll() is None
                time.sleep(0.05)
            time.sleep(0.3)
            process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    time.sleep(0.3)
    found = subprocess.run(["pgrep", "-f", "-x", hung], capture_output=True, text=True)
    assert found.stdout.strip() == "", f"the build's child outlived it\n{stderr}"
    if stop == "SIGTERM":
        assert process.returncode == 143, stderr
    else:
        assert process.returncode == 2, stderr
        assert "the build timed out after 1 s" in stderr
    assert_cleaned_up(work, repository)
