"""Output files: checked before any work, written whole or not at all;
a device, a FIFO or a descriptor written through, never replaced. The full and
read-only disks are real tmpfs mounts, the devices real nodes made with mknod."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import threading
from pathlib import Path

import pytest
from filesystems import Tmpfs, fill_filesystem
from hostile import HOSTILE_PATHS

from cutaway.output_files import (
    OutputPathError,
    OutputWriteError,
    check_output_paths,
    output_path_problem,
    store_path_problem,
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


# -- devices, FIFOs and descriptors: written through, never replaced -----------------------


def device_copy(directory: Path, name: str, major: int, minor: int) -> Path:
    """A character device node like /dev/null (1, 3) or /dev/full (1, 7), made in a temporary
    directory (the tests run as root), so that a bug replaces the copy, not the machine's."""
    path = directory / name
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
    return path


def assert_still_device(path: Path, major: int, minor: int) -> None:
    status = os.lstat(path)
    assert stat.S_ISCHR(status.st_mode), f"{path} was replaced by a file"
    assert (os.major(status.st_rdev), os.minor(status.st_rdev)) == (major, minor)


def test_a_character_device_is_written_through_not_replaced(tmp_path: Path) -> None:
    null = device_copy(tmp_path, "null", 1, 3)
    assert output_path_problem(str(null)) is None
    write_output_file(str(null), '{"x": 1}\n', "--export-json")
    assert_still_device(null, 1, 3)
    assert os.listdir(tmp_path) == ["null"]  # no temporary file either


def test_a_full_device_is_an_error_and_stays_a_device(tmp_path: Path) -> None:
    full = device_copy(tmp_path, "full", 1, 7)
    with pytest.raises(OutputWriteError) as caught:
        write_output_file(str(full), "text", "-o/--output")
    assert str(caught.value) == f"cannot write -o/--output '{full}': No space left on device"
    assert_still_device(full, 1, 7)


def test_a_symbolic_link_to_a_device_is_written_through(tmp_path: Path) -> None:
    null = device_copy(tmp_path, "null", 1, 3)
    (tmp_path / "link").symlink_to(null)
    write_output_file(str(tmp_path / "link"), "text", "--export-csv")
    assert (tmp_path / "link").is_symlink()
    assert_still_device(null, 1, 3)


def read_fifo(path: Path, limit: int | None = None) -> tuple[threading.Thread, list[bytes]]:
    """A reader of the FIFO in a thread: everything, or ``limit`` bytes and then it closes."""
    received: list[bytes] = []

    def read() -> None:
        with open(path, "rb") as fifo:
            received.append(fifo.read() if limit is None else fifo.read(limit))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, received


def test_a_fifo_is_written_through_to_its_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    text = "<html>✓</html>\n" * 20_000  # more than a pipe holds
    thread, received = read_fifo(fifo)
    write_output_file(str(fifo), text, "--export-html")
    thread.join(timeout=30)
    assert received == [text.encode("utf-8")]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["fifo"]


def test_a_fifo_whose_reader_goes_away_ends_quietly(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    thread, received = read_fifo(fifo, limit=1)
    write_output_file(str(fifo), "x" * 1_000_000, "-o/--output")  # no BrokenPipeError
    thread.join(timeout=30)
    assert received == [b"x"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_descriptor_of_this_process_is_written_to_itself(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        write_output_file(f"/dev/fd/{write_end}", "through the pipe", "--export-json")
        write_output_file(f"/proc/self/fd/{write_end}", " twice", "--export-json")
        os.close(write_end)
        assert os.read(read_end, 100) == b"through the pipe twice"
    finally:
        os.close(read_end)
        with contextlib.suppress(OSError):
            os.close(write_end)


def test_a_closed_descriptor_is_refused(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    os.close(write_end)
    assert output_path_problem(f"/dev/fd/{write_end}") == (
        f"names descriptor {write_end}, which is not open"
    )


def test_a_block_device_and_a_socket_are_refused(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    os.mknod(disk, 0o600 | stat.S_IFBLK, os.makedev(7, 0))  # a loop device's number
    with pytest.raises(OutputPathError) as caught:
        check_output_paths([("--export-json", str(disk))])
    assert "is a block device (a disk), not a file" in str(caught.value)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "socket"))
        problem = output_path_problem(str(tmp_path / "socket"))
    assert problem == "is a socket, not a file, a character device or a FIFO"
    assert stat.S_ISBLK(os.lstat(disk).st_mode)


def test_outputs_written_through_may_be_named_twice(tmp_path: Path) -> None:
    null = str(device_copy(tmp_path, "null", 1, 3))
    check_output_paths([("--export-json", null), ("--export-csv", null), ("--export-html", "-")])
    with pytest.raises(OutputPathError, match="same file"):
        check_output_paths([("--export-json", "a.json"), ("--export-csv", "a.json")])


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_hostile_paths_are_refused_or_written_as_files(tmp_path: Path, path: str) -> None:
    """Whatever a path holds, it is checked without an exception and, when it can be written,
    becomes a regular file inside the temporary directory, nowhere else."""
    full = os.path.join(tmp_path, path) if path else path
    problem = output_path_problem(full)
    if problem is None:
        write_output_file(full, "x", "--export-json")
        assert os.path.isfile(full)
        assert os.listdir(tmp_path) == [os.path.relpath(full, tmp_path).split("/")[0]]
    else:
        assert os.listdir(tmp_path) == []


def test_the_store_refuses_what_is_no_regular_file(tmp_path: Path) -> None:
    null = device_copy(tmp_path, "null", 1, 3)
    assert store_path_problem(str(null)) == "is a character device, not a regular file"
    os.mkfifo(tmp_path / "fifo")
    assert store_path_problem(str(tmp_path / "fifo")) == "is a FIFO, not a regular file"
    assert store_path_problem(str(tmp_path)) == "is a directory, not a regular file"
    assert store_path_problem(str(tmp_path / "new" / "cutaway.db")) is None
    (tmp_path / "cutaway.db").write_bytes(b"")
    assert store_path_problem(str(tmp_path / "cutaway.db")) is None
    device_copy(tmp_path, "cutaway.db-wal", 1, 3)
    journal = repr(str(tmp_path / "cutaway.db-wal"))
    assert store_path_problem(str(tmp_path / "cutaway.db")) == (
        f"{journal} beside it is a character device, not a regular file"
    )


def test_links_to_odd_places_are_refused(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    assert output_path_problem(str(tmp_path / "loop")) == "Too many levels of symbolic links"
    (tmp_path / "to-directory").symlink_to(tmp_path)
    assert output_path_problem(str(tmp_path / "to-directory")) == "is a directory, not a file"
    (tmp_path / "dangling").symlink_to(tmp_path / "missing" / "x.json")
    problem = output_path_problem(str(tmp_path / "dangling"))
    assert problem == f"no such directory: '{tmp_path / 'missing'}'"


def test_a_link_this_process_may_not_read_is_refused_in_words() -> None:
    """Another process's descriptor (/proc/1/fd/1) is a link that readlink refuses to anyone
    without ptrace rights over it: realpath raised PermissionError, a traceback."""
    unreadable = "/proc/1/fd/1"
    try:
        os.readlink(unreadable)
    except PermissionError:
        pass
    else:
        pytest.skip("this process may read /proc/1/fd (ptrace rights over PID 1)")
    assert output_path_problem(unreadable) == "Permission denied"
    with pytest.raises(OutputPathError, match="Permission denied"):
        check_output_paths([("-o/--output", unreadable)], keep=[("the store", "/proc/1/fd/2")])


def test_append_keeps_what_the_file_holds_even_in_a_read_only_directory(tmp_path: Path) -> None:
    """Appending writes the file in place: only the file must be writable, not its directory
    (a replacing write needs the directory for its rename)."""
    from cutaway.output_files import append_output_file

    locked = tmp_path / "locked"
    locked.mkdir()
    summary = locked / "summary.md"
    summary.write_text("earlier step\n")
    locked.chmod(0o555)
    try:
        with contextlib.suppress(OutputPathError):  # root may write anywhere: no refusal then
            check_output_paths([("--export-json", str(summary))])
        check_output_paths([("$S", str(summary))], appended=("$S",))
        append_output_file(str(summary), "### verdict\n", "$S")
    finally:
        locked.chmod(0o755)
    assert summary.read_text() == "earlier step\n### verdict\n"


def test_append_to_a_fifo_nobody_reads_is_an_error_at_once(tmp_path: Path) -> None:
    from cutaway.output_files import append_output_file

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OutputWriteError, match="a FIFO that nobody reads"):
        append_output_file(str(fifo), "text", "$S")
    thread, received = read_fifo(fifo)
    with open(fifo, "wb"):  # the reader's open returns; then the FIFO is open for both
        append_output_file(str(fifo), "text", "$S")
    thread.join(timeout=30)
    assert received == [b"text"]
