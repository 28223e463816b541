"""git, as the tests that build small repositories run it: quietly, with an identity of its own
(a CI machine may have none configured)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.org", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )
