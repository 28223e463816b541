"""Output files: checked before any work, written whole or not at all (issue #9, section 5).
The full and read-only disks are real tmpfs mounts."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from filesystems import Tmpfs, fill_filesystem

from cutaway.output_files import (
    OutputPathError,
    OutputWriteError,
    check_output_paths,
    output_path_problem,
    write_output_file,
)


def test_a_writable_path_has_no_problem(tmp_path: Path) -> None:
    assert output_path_problem(str(tmp_path / "new.json")) is None
    (tmp_path / "old.json").write_text("old")
    assert output_path_problem(str(tmp_path / "old.json")) is None


def test_problems_are_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    assert output_path_problem("") == "an empty path"
    assert output_path_problem(str(tmp_path)) == "is a directory, not a file"
    missing = tmp_path / "missing"
    assert output_path_problem(str(missing / "x.json")) == f"no such directory: '{missing}'"
    under_a_file = output_path_problem(str(tmp_path / "file" / "x.json"))
    assert under_a_file == f"'{tmp_path / 'file'}' is not a directory"
    assert "NUL" in (output_path_problem("a\0b") or "")


def test_control_characters_in_a_path_are_shown_escaped(tmp_path: Path) -> None:
    path = str(tmp_path / "\x1b[2J\x1b]0;pwned\x07" / "x.json")
    with pytest.raises(OutputPathError) as caught:
        check_output_paths([("--export-json", path)])
    assert "\x1b" not in str(caught.value) and "\x07" not in str(caught.value)
    assert "\\x1b[2J" in str(caught.value)


def test_a_read_only_filesystem_is_found_before_writing(tmpfs: Tmpfs) -> None:
    read_only = tmpfs.mount("1m", options="ro")
    problem = output_path_problem(str(read_only / "x.json"))
    assert problem is not None and "read-only" in problem


def test_check_names_the_option_and_path(tmp_path: Path) -> None:
    with pytest.raises(OutputPathError) as caught:
        check_output_paths([("--export-json", "/nonexistent-dir/x.json")])
    assert str(caught.value) == (
        "--export-json '/nonexistent-dir/x.json': no such directory: '/nonexistent-dir'"
    )


def test_an_output_never_replaces_the_store_or_another_output(tmp_path: Path) -> None:
    db = tmp_path / "cutaway.db"
    db.write_text("")
    with pytest.raises(OutputPathError, match="would replace the store"):
        check_output_paths([("--export-csv", str(db))], [("the store (--db)", str(db))])
    same = str(tmp_path / "r.out")
    with pytest.raises(OutputPathError, match="same file as --export-json"):
        check_output_paths([("--export-json", same), ("--export-csv", same)])


def test_write_replaces_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")
    target.chmod(0o640)
    write_output_file(str(target), "new ✓\n", "--export-json")
    assert target.read_text(encoding="utf-8") == "new ✓\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # an existing file keeps its mode
    assert sorted(os.listdir(tmp_path)) == ["report.json"]


def test_a_new_file_gets_the_usual_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        write_output_file(str(tmp_path / "new.md"), "x", "--export-markdown")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o644


def test_a_symbolic_link_is_written_through(tmp_path: Path) -> None:
    (tmp_path / "real.csv").write_text("old")
    (tmp_path / "link.csv").symlink_to("real.csv")
    write_output_file(str(tmp_path / "link.csv"), "new", "--export-csv")
    assert (tmp_path / "link.csv").is_symlink()
    assert (tmp_path / "real.csv").read_text() == "new"


def test_a_full_disk_leaves_the_old_file_and_nothing_else(tmpfs: Tmpfs) -> None:
    disk = tmpfs.mount("1m")
    target = disk / "report.json"
    target.write_text('{"old": true}')
    fill_filesystem(disk)
    with pytest.raises(OutputWriteError) as caught:
        write_output_file(str(target), "x" * 300_000, "--export-json")
    message = str(caught.value)
    assert message.startswith(f"cannot write --export-json '{target}': No space left on device")
    assert target.read_text() == '{"old": true}'
    assert sorted(os.listdir(disk)) == ["filler", "report.json"]


def test_a_full_disk_leaves_no_new_file(tmpfs: Tmpfs) -> None:
    disk = tmpfs.mount("1m")
    fill_filesystem(disk)
    with pytest.raises(OutputWriteError):
        write_output_file(str(disk / "report.csv"), "a,b\n" * 100_000, "--export-csv")
    assert os.listdir(disk) == ["filler"]
