"""The `cutaway` command as the integration tests run it: this interpreter's `python -m
cutaway`, so the tests measure the source tree they sit in, with an environment that does not
leak the developer's own choices into a test (their store, their terminal's width, colour)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

CUTAWAY = [sys.executable, "-m", "cutaway"]

# A test names its own store (--db, or CUTAWAY_DB through ``env``) and its own width.
LEFT_OUT = ("CUTAWAY_DB", "COLUMNS")


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without LEFT_OUT, with NO_COLOR=1 and then ``extra``."""
    kept = {name: value for name, value in os.environ.items() if name not in LEFT_OUT}
    return {**kept, "NO_COLOR": "1", **(extra or {})}


def cutaway(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = False,
    timeout: float = 600,
    errors: str = "strict",
) -> subprocess.CompletedProcess[str]:
    """Run `cutaway ARGS` to its end, its output captured as text. ``timeout`` bounds a hang,
    it is no speed check. With ``check``, a non-zero exit raises with both outputs."""
    result = subprocess.run(
        [*CUTAWAY, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors=errors,
        timeout=timeout,
        env=environment(env),
    )
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result
