"""Every file cutaway writes is checked before anything is measured, and written whole or not at
all: a bad export path is exit 2 before the first run, a full disk leaves no truncated export
(issue #9, section 5). The full and read-only disks are real tmpfs mounts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from filesystems import Tmpfs, fill_filesystem

CUTAWAY = [sys.executable, "-m", "cutaway"]


def cutaway(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CUTAWAY, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )


def quick_run(cwd: Path, *options: str, command: str = "touch ran") -> list[str]:
    return ["run", "-c", command, "--rounds", "2", "--warmup", "0", *options]


@pytest.mark.parametrize("option", ["--export-json", "--export-csv", "--export-markdown"])
def test_an_export_into_a_missing_directory_stops_before_any_run(
    tmp_path: Path, option: str
) -> None:
    result = cutaway(tmp_path, *quick_run(tmp_path, option, "/nonexistent-dir/x.out"))
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        f"cutaway: {option} '/nonexistent-dir/x.out': no such directory: '/nonexistent-dir'\n"
    )
    assert not (tmp_path / "ran").exists()  # nothing was measured
    assert not (tmp_path / ".cutaway").exists()  # and nothing stored


def test_an_export_onto_a_directory_or_a_read_only_disk_stops_before_any_run(
    tmp_path: Path, tmpfs: Tmpfs
) -> None:
    (tmp_path / "reports").mkdir()
    result = cutaway(tmp_path, *quick_run(tmp_path, "--export-csv", "reports"))
    assert result.returncode == 2, result.stderr
    assert "--export-csv 'reports': is a directory" in result.stderr
    read_only = tmpfs.mount("1m", options="ro")
    target = str(read_only / "x.md")
    result = cutaway(tmp_path, *quick_run(tmp_path, "--export-markdown", target))
    assert result.returncode == 2, result.stderr
    assert f"--export-markdown '{target}': cannot write in '{read_only}'" in result.stderr
    assert not (tmp_path / "ran").exists()


def test_an_export_never_replaces_the_store(tmp_path: Path) -> None:
    result = cutaway(tmp_path, *quick_run(tmp_path, "--export-json", ".cutaway/cutaway.db"))
    assert result.returncode == 2
    assert "would replace the store (--db)" in result.stderr
    assert not (tmp_path / "ran").exists()


def test_the_commands_output_file_on_a_read_only_disk_stops_before_any_run(
    tmp_path: Path, tmpfs: Tmpfs
) -> None:
    read_only = tmpfs.mount("1m", options="ro")
    result = cutaway(tmp_path, *quick_run(tmp_path, "--output", str(read_only / "out")))
    assert result.returncode == 2, result.stderr
    assert f"--output: cannot write in '{read_only}'" in result.stderr
    assert not (tmp_path / "ran").exists()


def test_reading_commands_check_their_outputs_first(tmp_path: Path) -> None:
    assert cutaway(tmp_path, *quick_run(tmp_path)).returncode == 0
    bad = "/nonexistent-dir/x.json"
    for argv in (
        ["report", "--export-json", bad],
        ["compare", "1", "1", "--export-csv", bad],
        ["export", "1", "--format", "json", "-o", bad],
        ["export", "1", "--format", "runs-csv", "--output", str(tmp_path)],
    ):
        result = cutaway(tmp_path, *argv)
        assert result.returncode == 2, (argv, result.stderr)
        assert "Traceback" not in result.stderr
        assert result.stdout == ""


def test_an_export_that_meets_a_full_disk_leaves_nothing_and_says_how_to_export_again(
    tmp_path: Path, tmpfs: Tmpfs
) -> None:
    """The disk fills while the experiment runs (the measured command fills it), so the check at
    the start passes and the write at the end fails: no truncated file, a clear message, the
    results still stored and exportable."""
    disk = tmpfs.mount("1m")
    fill = f"sh -c 'test -e {disk}/filler || cat /dev/zero > {disk}/filler; true'"
    target = disk / "report.json"
    result = cutaway(
        tmp_path,
        *quick_run(tmp_path, "--export-json", str(target), "--shell", command=fill),
    )
    assert result.returncode == 1, result.stderr
    assert f"cannot write --export-json '{target}': No space left on device" in result.stderr
    assert "`cutaway export 1 --format FORMAT -o PATH` writes them" in result.stderr
    assert "Traceback" not in result.stderr
    assert "stored as #1" in result.stderr
    assert os.listdir(disk) == ["filler"]  # no report.json, no temporary file
    assert result.stdout  # the report was printed all the same
    exported = cutaway(tmp_path, "export", "1", "--format", "json")
    assert json.loads(exported.stdout)["experiments"][0]["status"] == "complete"


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "runs-csv"])
def test_export_onto_a_full_disk_keeps_the_earlier_file(
    tmp_path: Path, tmpfs: Tmpfs, fmt: str
) -> None:
    assert cutaway(tmp_path, *quick_run(tmp_path, command="true")).returncode == 0
    disk = tmpfs.mount("1m")
    target = disk / "out"
    target.write_text("earlier export\n")
    fill_filesystem(disk)
    result = cutaway(tmp_path, "export", "1", "--format", fmt, "-o", str(target))
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(
        f"cutaway: cannot write -o/--output '{target}': No space left on device"
    )
    assert target.read_text() == "earlier export\n"
    assert sorted(os.listdir(disk)) == ["filler", "out"]
