"""Every file cutaway writes is checked before anything is measured, and written whole or not at
all: a bad export path is exit 2 before the first run, a full disk leaves no truncated export.
A device, a FIFO or standard output is written through, never replaced,
and a store on a device is refused. The full and read-only disks are real tmpfs
mounts, the devices real nodes made with mknod."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import stat
import subprocess
import threading
from pathlib import Path

import pytest
from filesystems import Tmpfs, fill_filesystem

from tests.cutaway_command import CUTAWAY, cutaway


def quick_run(cwd: Path, *options: str, command: str = "touch ran") -> list[str]:
    return ["run", "-c", command, "--rounds", "2", "--warmup", "0", *options]


@pytest.mark.parametrize("option", ["--export-json", "--export-csv", "--export-markdown"])
def test_an_export_into_a_missing_directory_stops_before_any_run(
    tmp_path: Path, option: str
) -> None:
    result = cutaway(*quick_run(tmp_path, option, "/nonexistent-dir/x.out"), cwd=tmp_path)
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
    result = cutaway(*quick_run(tmp_path, "--export-csv", "reports"), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "--export-csv 'reports': is a directory" in result.stderr
    read_only = tmpfs.mount("1m", options="ro")
    target = str(read_only / "x.md")
    result = cutaway(*quick_run(tmp_path, "--export-markdown", target), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"--export-markdown '{target}': cannot write in '{read_only}'" in result.stderr
    assert not (tmp_path / "ran").exists()


def test_an_export_never_replaces_the_store(tmp_path: Path) -> None:
    result = cutaway(*quick_run(tmp_path, "--export-json", ".cutaway/cutaway.db"), cwd=tmp_path)
    assert result.returncode == 2
    assert "would replace the store (--db)" in result.stderr
    assert not (tmp_path / "ran").exists()


def test_the_commands_output_file_on_a_read_only_disk_stops_before_any_run(
    tmp_path: Path, tmpfs: Tmpfs
) -> None:
    read_only = tmpfs.mount("1m", options="ro")
    result = cutaway(*quick_run(tmp_path, "--output", str(read_only / "out")), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"--output: cannot write in '{read_only}'" in result.stderr
    assert not (tmp_path / "ran").exists()


def test_reading_commands_check_their_outputs_first(tmp_path: Path) -> None:
    assert cutaway(*quick_run(tmp_path), cwd=tmp_path).returncode == 0
    bad = "/nonexistent-dir/x.json"
    for argv in (
        ["report", "--export-json", bad],
        ["compare", "1", "1", "--export-csv", bad],
        ["export", "1", "--format", "json", "-o", bad],
        ["export", "1", "--format", "runs-csv", "--output", str(tmp_path)],
    ):
        result = cutaway(*argv, cwd=tmp_path)
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
        *quick_run(tmp_path, "--export-json", str(target), "--shell", command=fill), cwd=tmp_path
    )
    assert result.returncode == 1, result.stderr
    assert f"cannot write --export-json '{target}': No space left on device" in result.stderr
    assert "`cutaway export 1 --format FORMAT -o PATH` writes them" in result.stderr
    assert "Traceback" not in result.stderr
    assert "stored as #1" in result.stderr
    assert os.listdir(disk) == ["filler"]  # no report.json, no temporary file
    assert result.stdout  # the report was printed all the same
    exported = cutaway("export", "1", "--format", "json", cwd=tmp_path)
    assert json.loads(exported.stdout)["experiments"][0]["status"] == "complete"


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "runs-csv"])
def test_export_onto_a_full_disk_keeps_the_earlier_file(
    tmp_path: Path, tmpfs: Tmpfs, fmt: str
) -> None:
    assert cutaway(*quick_run(tmp_path, command="true"), cwd=tmp_path).returncode == 0
    disk = tmpfs.mount("1m")
    target = disk / "out"
    target.write_text("earlier export\n")
    fill_filesystem(disk)
    result = cutaway("export", "1", "--format", fmt, "-o", str(target), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(
        f"cutaway: cannot write -o/--output '{target}': No space left on device"
    )
    assert target.read_text() == "earlier export\n"
    assert sorted(os.listdir(disk)) == ["filler", "out"]


# -- devices, FIFOs and standard output: written through, never replaced -------


def device_copy(directory: Path, name: str, major: int, minor: int) -> Path:
    """A character device node like /dev/null (1, 3) or /dev/full (1, 7) in a temporary
    directory (the tests run as root): a bug replaces the copy, not the machine's device."""
    path = directory / name
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
    return path


def is_device(path: Path, major: int, minor: int) -> bool:
    status = os.lstat(path)
    rdev = (os.major(status.st_rdev), os.minor(status.st_rdev))
    return stat.S_ISCHR(status.st_mode) and rdev == (major, minor)


def test_exports_onto_a_device_write_through_it_and_never_replace_it(tmp_path: Path) -> None:
    null = device_copy(tmp_path, "null", 1, 3)
    result = cutaway(
        *quick_run(tmp_path, "--export-json", str(null), "--export-html", str(null)), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert is_device(null, 1, 3)
    for fmt in ("json", "html", "runs-csv", "folded"):
        exported = cutaway("export", "1", "--format", fmt, "-o", str(null), cwd=tmp_path)
        assert exported.returncode in (0, 2), exported.stderr  # folded: no profile, exit 2
        assert is_device(null, 1, 3), fmt
    assert sorted(os.listdir(tmp_path)) == [".cutaway", "null", "ran"]


def test_an_export_onto_a_full_device_fails_and_leaves_the_device(tmp_path: Path) -> None:
    full = device_copy(tmp_path, "full", 1, 7)
    result = cutaway(*quick_run(tmp_path, "--export-json", str(full)), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert f"cannot write --export-json '{full}': No space left on device" in result.stderr
    assert "Traceback" not in result.stderr
    assert is_device(full, 1, 7)


def test_an_export_into_a_fifo_reaches_its_reader(tmp_path: Path) -> None:
    assert cutaway(*quick_run(tmp_path), cwd=tmp_path).returncode == 0
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as reader:
            received.append(reader.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    result = cutaway("export", "1", "--format", "json", "-o", str(fifo), cwd=tmp_path)
    reader.join(timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(received[0])["experiments"][0]["id"] == 1
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("output", [[], ["-o", "/dev/stdout"], ["-o", "-"]])
def test_an_export_to_standard_output_cut_short_by_head_ends_quietly(
    tmp_path: Path, output: list[str]
) -> None:
    """The HTML export is larger than a pipe holds, so `head -c1` closes the pipe while cutaway
    still writes: that is the reader's choice, not an error."""
    assert cutaway(*quick_run(tmp_path), cwd=tmp_path).returncode == 0
    command = shlex.join([*CUTAWAY, "export", "1", "--format", "html", *output])
    result = subprocess.run(
        ["bash", "-c", f'{command} | head -c1; echo " ${{PIPESTATUS[0]}}"'],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout == "< 0\n", result.stderr
    assert result.stderr == ""


def test_a_store_on_a_device_is_refused_before_anything_runs(tmp_path: Path) -> None:
    null = device_copy(tmp_path, "null", 1, 3)
    for argv in (quick_run(tmp_path), ["report"], ["list"], ["export", "1", "--format", "json"]):
        result = cutaway(*argv, "--db", str(null), cwd=tmp_path)
        assert result.returncode == 2, (argv, result.stderr)
        assert result.stderr == (
            f"cutaway: the store '{null}': is a character device, not a regular file; a store "
            "is an SQLite file or a new path (nothing was created)\n"
        )
    assert os.listdir(tmp_path) == ["null"]  # no null-journal, nothing ran
    assert is_device(null, 1, 3)


def test_a_store_beside_a_device_journal_is_refused(tmp_path: Path) -> None:
    assert cutaway(*quick_run(tmp_path), cwd=tmp_path).returncode == 0
    wal = device_copy(tmp_path / ".cutaway", "cutaway.db-wal", 1, 3)
    result = cutaway("report", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "'.cutaway/cutaway.db-wal' beside it is a character device" in result.stderr
    assert is_device(wal, 1, 3)


def test_list_beside_a_fifo_journal_is_refused_not_left_waiting(tmp_path: Path) -> None:
    """`list` reads the store without the Store class, to start fast: it handed SQLite a store
    whose `-journal` was a FIFO, and SQLite, opening it to read a journal's header, waited for
    a writer for ever (found by a hostile re-run). Refused as every other command refuses it."""
    assert cutaway(*quick_run(tmp_path), cwd=tmp_path).returncode == 0
    journal = tmp_path / ".cutaway" / "cutaway.db-journal"
    os.mkfifo(journal)
    for argv in (["list"], ["list", "--db", ".cutaway/cutaway.db"]):
        result = cutaway(*argv, cwd=tmp_path, timeout=60)
        assert result.returncode == 2, result.stderr
        assert "'.cutaway/cutaway.db-journal' beside it is a FIFO" in result.stderr
    assert stat.S_ISFIFO(journal.lstat().st_mode)


def test_standard_output_on_a_full_device_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    full = device_copy(tmp_path, "full", 1, 7)
    assert cutaway(*quick_run(tmp_path), cwd=tmp_path).returncode == 0
    for argv in (
        ["report"],
        ["list"],
        ["export", "1", "--format", "json"],
        ["export", "1", "--format", "html", "-o", "/dev/stdout"],
    ):
        with open(full, "w") as stdout:
            result = subprocess.run(
                [*CUTAWAY, *argv], cwd=tmp_path, stdout=stdout, stderr=subprocess.PIPE, text=True
            )
        assert result.returncode == 1, (argv, result.stderr)
        assert "No space left on device" in result.stderr, argv
        assert "Traceback" not in result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
    with open(full, "w") as stdout:
        run = subprocess.run(
            [*CUTAWAY, *quick_run(tmp_path, "-q")],
            cwd=tmp_path,
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith("cutaway: cannot write standard output: No space left on device\n")
    assert "`cutaway export 2 --format FORMAT -o PATH` writes them" in run.stderr
    assert is_device(full, 1, 7)


# -- /dev/tty: the terminal of whichever process opens it ----------------------


def test_dev_tty_without_a_controlling_terminal_is_refused_before_any_run(tmp_path: Path) -> None:
    """/dev/tty is a device node on every machine, but opens only in a process that has a
    controlling terminal: in a new session (setsid, as under cron or a CI runner) it has none,
    which is found before anything is measured, for every command that writes a file."""
    assert cutaway(*quick_run(tmp_path, "--db", "kept.db"), cwd=tmp_path).returncode == 0
    os.remove(tmp_path / "ran")
    for argv in (
        quick_run(tmp_path, "--export-json", "/dev/tty"),
        quick_run(tmp_path, "--export-html", "/dev/tty"),
        quick_run(tmp_path, "--output", "/dev/tty"),
        ["export", "1", "--db", "kept.db", "--format", "html", "-o", "/dev/tty"],
        ["check", "-c", "touch ran", "--rounds", "2", "--warmup", "0", "--summary", "/dev/tty"],
    ):
        result = subprocess.run(
            [*CUTAWAY, *argv],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            start_new_session=True,  # no controlling terminal
        )
        assert result.returncode == 2, (argv, result.stderr)
        assert "/dev/tty" in result.stderr.replace(" for /dev/tty to name", ""), argv
        assert "this process has no controlling terminal" in result.stderr, argv
        assert "Traceback" not in result.stderr
        assert not (tmp_path / "ran").exists(), argv  # nothing was measured
        assert not (tmp_path / ".cutaway").exists(), argv  # nor stored


def test_dev_tty_with_a_controlling_terminal_is_written_through(tmp_path: Path) -> None:
    """In a session whose controlling terminal is a pseudo-terminal, the export arrives on it."""
    controller, terminal = os.openpty()

    def take_the_terminal() -> None:
        import fcntl
        import termios

        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    process = subprocess.Popen(
        [*CUTAWAY, *quick_run(tmp_path, "--export-csv", "/dev/tty", "--quiet")],
        cwd=tmp_path,
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=take_the_terminal,
    )
    os.close(terminal)
    received = bytearray()
    with contextlib.suppress(OSError):  # EIO once the last writer of the terminal has gone
        while chunk := os.read(controller, 65536):
            received += chunk
    os.close(controller)
    _, errors = process.communicate(timeout=120)
    assert process.returncode == 0, errors
    assert b"variant,metric" in received.replace(b"\r\n", b"\n"), received[:300]
    assert (tmp_path / "ran").exists()
