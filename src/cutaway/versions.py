"""The version of what was measured, for `cutaway history`: ``git describe --tags --always
--dirty`` of a checkout (``--version-from DIR``), stored as the experiment's label. ``--tags``
so that a lightweight tag (``git tag v1.2``, the common kind) names the version too."""

from __future__ import annotations

import subprocess
from pathlib import Path


class VersionError(ValueError):
    """The version cannot be read: not a directory, not a git checkout (exit 2)."""


def describe_checkout(directory: str | Path) -> str:
    """``git describe --tags --always --dirty`` of the checkout at ``directory``: the nearest tag
    with the commits since and the short hash (``v1.2-3-gabc1234``), or the short hash alone
    when no tag is reachable, ``-dirty`` when the tree has uncommitted changes."""
    path = Path(directory)
    if not path.is_dir():
        raise VersionError(f"--version-from {directory}: not a directory")
    try:
        result = subprocess.run(
            ["git", "-C", str(path), "describe", "--tags", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise VersionError(f"--version-from {directory}: git describe failed: {error}") from None
    if result.returncode != 0:
        reason = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
        raise VersionError(
            f"--version-from {directory}: not a git checkout with a commit ({reason})"
        )
    return result.stdout.strip()
