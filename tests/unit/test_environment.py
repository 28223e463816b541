"""The environment fingerprint (cutaway.environment): the working directory's commit is read
by a real git, started while the rest is read."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cutaway.environment import capture_environment

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
