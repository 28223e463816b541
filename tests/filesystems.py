"""Real filesystems for tests that need one to fill up or to be read-only: a small tmpfs
mounted for one test (the ``tmpfs`` fixture in conftest.py) and a way to fill it."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest


class Tmpfs:
    """A small tmpfs mounted for one test (a real filesystem that really fills up)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.mounts: list[Path] = []

    def mount(self, size: str = "4m", name: str = "disk", options: str = "") -> Path:
        """Mount a tmpfs of ``size`` at ``base/name``; skip the test (saying why) when this
        machine does not let us mount one (not root, or no CAP_SYS_ADMIN in a container)."""
        path = self.base / name
        path.mkdir()
        mount_options = f"size={size},mode=0777" + (f",{options}" if options else "")
        result = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", mount_options, "cutaway-test", str(path)],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here to fill a real disk: {result.stderr.strip()}")
        self.mounts.append(path)
        return path

    def unmount_all(self) -> None:
        for path in reversed(self.mounts):
            # Lazily: a process the test started may still hold a file open on it.
            subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True)
        self.mounts.clear()


def fill_filesystem(directory: Path, name: str = "filler") -> Path:
    """Write zeros into ``directory/name`` until its filesystem has no byte left."""
    path = directory / name
    chunk = b"\0" * 65536
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        while True:
            try:
                os.write(handle, chunk)
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
                if len(chunk) == 1:
                    return path
                chunk = chunk[: len(chunk) // 2]
    finally:
        os.close(handle)
