"""Temporary directories named after their owning process: those of a process that is gone
(killed with SIGKILL, so it could not clean up) are removed by the next one, and nothing else."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from cutaway.processes import owned_directory, process_start_time

PREFIX = "cutaway-profile-"


def test_a_dead_owners_directory_is_removed_and_a_live_ones_is_kept(tmp_path: Path) -> None:
    child = subprocess.Popen(["sleep", "60"])
    try:
        start = process_start_time(child.pid)
        live = tmp_path / f"{PREFIX}{child.pid}-{start}-abcd"
        reused = tmp_path / f"{PREFIX}{child.pid}-{start + 1}-abcd"  # same pid, another process
        for directory in (live, reused):
            directory.mkdir()
            (directory / "perf.data").write_bytes(b"x")
        other_prefix = tmp_path / f"cutaway-instructions-{child.pid}-{start + 1}-abcd"
        old_style = tmp_path / f"{PREFIX}k3j4h5"  # no owner in its name: left alone
        other_prefix.mkdir()
        old_style.mkdir()
        made = owned_directory(PREFIX, str(tmp_path))
    finally:
        child.kill()
        child.wait()
    assert made.name.startswith(f"{PREFIX}{os.getpid()}-{process_start_time(os.getpid())}-")
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        path.name for path in (live, other_prefix, old_style, made)
    )
    gone = owned_directory(PREFIX, str(tmp_path))  # now the sleep has exited too
    assert not live.exists() and made.exists() and gone.exists()
