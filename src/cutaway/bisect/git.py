"""The git repository a bisection drives: commits between GOOD and BAD, and one worktree per
commit built (``git worktree add --detach``), removed afterwards. Every git failure that is the
user's (not a repository, an unknown commit, GOOD not an ancestor of BAD) raises
:class:`BisectInputError` saying so plainly."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass


class BisectInputError(ValueError):
    """Bad input to a bisection: exit status 2."""


class GitError(RuntimeError):
    """git failed where it should not have (a worktree could not be made)."""


@dataclass(frozen=True)
class Repository:
    """A git working tree's top directory."""

    top: str

    def git(self, *arguments: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["git", "-C", self.top, *arguments],
            capture_output=True,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
        )
        if check and result.returncode != 0:
            raise GitError(f"git {' '.join(arguments)} failed: {result.stderr.strip()}")
        return result

    def resolve(self, revision: str, role: str) -> str:
        """The full hash of the commit ``revision`` names."""
        if revision.startswith("-"):
            raise BisectInputError(f"{role} {revision!r} is not a commit")
        result = self.git("rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}", check=False)
        if result.returncode != 0:
            raise BisectInputError(f"{role} {revision!r} names no commit in {self.top}")
        return result.stdout.strip()

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        result = self.git("merge-base", "--is-ancestor", ancestor, descendant, check=False)
        return result.returncode == 0

    def commits_after(self, good: str, bad: str) -> list[str]:
        """The commits after ``good`` up to ``bad`` included, oldest first, along the first
        parents (a merge is tested as one commit, as `git bisect --first-parent` does)."""
        result = self.git(
            "rev-list", "--reverse", "--first-parent", "--ancestry-path", f"{good}..{bad}"
        )
        return result.stdout.split()

    def subject(self, commit: str) -> str:
        return self.git("log", "-1", "--format=%s", commit).stdout.strip()

    def add_worktree(self, commit: str, directory: str) -> None:
        self.git("worktree", "add", "--detach", "--quiet", directory, commit)

    def remove_worktree(self, directory: str) -> None:
        """Remove a worktree and what its build left in it; never raises (it runs while
        cleaning up after a failure too)."""
        self.git("worktree", "remove", "--force", directory, check=False)
        self.git("worktree", "prune", check=False)


def open_repository(path: str) -> Repository:
    """The repository at or above ``path``; BisectInputError when there is none."""
    if not os.path.isdir(path):
        raise BisectInputError(f"{path!r} is not a directory")
    try:
        result = subprocess.run(
            ["git", "-C", path, "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise BisectInputError("git is not installed (bisect drives a git repository)") from None
    if result.returncode != 0:
        raise BisectInputError(
            f"{os.path.abspath(path)!r} is not in a git repository (give --repo DIR)"
        )
    return Repository(result.stdout.strip())
