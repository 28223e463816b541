"""Daemons that a test's experiment started, watched from /proc, so that the test can check
that none of them outlived it: which of them still run (found by the test's directory on their
command line), and which TCP ports listen."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path


def read(path: Path) -> str:
    """A file's text, or "" when it cannot be read (gone, a process that exited)."""
    try:
        return path.read_text()
    except OSError:
        return ""


def alive(pid: int) -> str | None:
    """The program a live (not zombie) process runs, or None."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        program = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return None
    return None if state in ("Z", "X") else program


def listening_ports() -> set[int]:
    """Every TCP port something listens on (IPv4 and IPv6)."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # TCP_LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def daemons_mentioning(text: str, programs: Collection[str]) -> list[str]:
    """Live processes whose program's name starts with one of ``programs`` and whose command
    line contains ``text`` (the test's directory), as "PID: COMMAND LINE"."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        program = alive(int(entry.name))
        if program is None or not program.startswith(tuple(programs)):
            continue
        cmdline = read(entry / "cmdline").replace("\0", " ")
        if text in cmdline:
            found.append(f"{entry.name}: {cmdline}")
    return found


def any_listening(ports: Iterable[int]) -> bool:
    """Whether something listens on one of ``ports``: an example's fixed ports are taken."""
    return bool(set(ports) & listening_ports())


@contextmanager
def daemon_directory(prefix: str) -> Iterator[Path]:
    """A new directory under /tmp that daemons which drop their privileges can read (mode
    755: pytest's own tmp_path is private to root), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
