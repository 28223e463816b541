"""The environment fingerprint (cutaway.environment): the working directory's commit is read
by a real git, started while the rest is read."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cutaway.cli import commands
from cutaway.environment import GitCommit, capture_environment

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(directory: Path, *arguments: str) -> str:
    return subprocess.run(
        ["git", "-C", str(directory), *arguments], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_commit_of_a_repository_is_its_head(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "file").write_text("x\n")
    git(tmp_path, "add", "file")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "one")
    fingerprint = capture_environment(str(tmp_path))
    assert fingerprint["git_commit"] == git(tmp_path, "rev-parse", "HEAD")
    assert fingerprint["cwd"] == str(tmp_path)


def test_a_directory_outside_any_repository_has_no_commit(tmp_path: Path) -> None:
    fingerprint = capture_environment(str(tmp_path))
    assert fingerprint["git_commit"] is None
    assert fingerprint["os"] and fingerprint["kernel"]


def commit_in(directory: Path) -> str:
    git(directory, "init", "-q")
    (directory / "file").write_text("x\n")
    git(directory, "add", "file")
    git(directory, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "one")
    return git(directory, "rev-parse", "HEAD")


def test_a_commit_started_earlier_is_the_one_the_fingerprint_holds(tmp_path: Path) -> None:
    """`cutaway run` starts git before it imports the runner, and hands it over."""
    head = commit_in(tmp_path)
    started = GitCommit(str(tmp_path))
    assert capture_environment(str(tmp_path), git=started)["git_commit"] == head
    assert started.read() == head  # read once, the same answer after


def test_a_run_refused_for_bad_input_waits_for_the_git_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """git is started before the command line's experiment is read: an experiment refused
    (exit 2, nothing stored) still waits for it, and the one it started is the one read."""
    import cutaway.environment

    commit_in(tmp_path)
    monkeypatch.chdir(tmp_path)
    started: list[GitCommit] = []
    read: list[GitCommit] = []

    class Watched(GitCommit):
        def __init__(self, directory: str) -> None:
            super().__init__(directory)
            started.append(self)

        def read(self) -> str | None:
            read.append(self)
            return super().read()

    monkeypatch.setattr(cutaway.environment, "GitCommit", Watched)
    db = tmp_path / "store.db"
    assert commands.main(["run", "-c", "true", "--rounds", "0", "--db", str(db)]) == 2
    assert "--rounds" in capsys.readouterr().err
    assert len(started) == 1
    assert read == started
    assert not db.exists()
