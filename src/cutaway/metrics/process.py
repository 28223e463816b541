"""Find a running process (by pid file, name or listening port) and read what it uses in /proc.

A process is read with its descendants (a server's workers: nginx's master and its children),
so "rss" is the resident memory of the whole tree. Everything here reads /proc once per call
and never blocks; a process of the tree that exits between two reads is skipped, the root
exiting raises :class:`ProcessGone`."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_TCP_LISTEN = "0A"
_PROC_TCP = ("/proc/net/tcp", "/proc/net/tcp6")


class ProcessNotFound(LookupError):
    """No process matches; the message says what was looked for."""


class ProcessGone(LookupError):
    """The process exited."""


def find_process(
    *, pid_file: str | None = None, name: str | None = None, port: int | None = None
) -> int:
    """The pid of the one process described (exactly one of the three ways)."""
    if pid_file is not None:
        return pid_from_file(pid_file)
    if name is not None:
        return pid_by_name(name)
    if port is not None:
        return pid_by_port(port)
    raise ValueError("find_process needs a pid file, a name or a port")


def pid_from_file(path: str) -> int:
    try:
        with open(path) as file:
            text = file.read(64).strip()
    except FileNotFoundError:
        raise ProcessNotFound(f"pid file {path} does not exist") from None
    except OSError as error:
        raise ProcessNotFound(f"cannot read pid file {path}: {error.strerror}") from None
    # isascii: str.isdigit() accepts "²", which int() refuses.
    if not (text.isascii() and text.isdigit()) or int(text) <= 0:
        raise ProcessNotFound(f"pid file {path} holds {text!r}, not a process id")
    pid = int(text)
    if not alive(pid):
        raise ProcessNotFound(f"no process {pid} is running (from pid file {path})")
    return pid


def pid_by_name(name: str) -> int:
    """The oldest process whose command name (comm) or program basename is ``name``: a
    server's master started before its workers."""
    found = [pid for pid in _pids() if pid != os.getpid() and _named(pid, name)]
    if not found:
        raise ProcessNotFound(f"no process named {name!r} is running")
    return min(found, key=_start_time)


def pid_by_port(port: int) -> int:
    """The oldest process holding a TCP socket that listens on ``port`` (IPv4 or IPv6)."""
    inodes = set(_listening_inodes(port))
    if not inodes:
        raise ProcessNotFound(f"nothing listens on TCP port {port}")
    links = {f"socket:[{inode}]" for inode in inodes}
    holders = [pid for pid in _pids() if any(link in links for link in _fd_links(pid))]
    if not holders:
        raise ProcessNotFound(
            f"a socket listens on TCP port {port}, but no process cutaway may inspect holds it"
        )
    return min(holders, key=_start_time)


def alive(pid: int) -> bool:
    """Running, not a zombie."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


# How long a process tree, once walked, stands for the process and its descendants. Walking it
# opens /proc/PID/task/TID/children for every thread of every member: for a server of 200
# threads, sampled for five stats every tick, that was 1,000 opens a tick in cutaway, while the
# measured server ran on the same cores. Members are re-read every tick; the tree's shape (a
# worker forked or gone) is seen within this time.
TREE_SECONDS = 1.0
_trees: dict[int, tuple[float, list[int]]] = {}


def tree(pid: int, *, now: float | None = None) -> list[int]:
    """``pid`` and all its descendants (from /proc/PID/task/TID/children), as walked at most
    TREE_SECONDS ago."""
    now = time.monotonic() if now is None else now
    cached = _trees.get(pid)
    if cached is not None and now - cached[0] < TREE_SECONDS:
        return cached[1]
    found = _walk(pid)
    # Walks older than TREE_SECONDS would be walked again anyway: dropping them here keeps the
    # cache to the processes sampled within the last second, for a long-lived API user too.
    for stale in [key for key, (walked, _) in _trees.items() if now - walked >= TREE_SECONDS]:
        del _trees[stale]
    _trees[pid] = (now, found)
    return found


def _walk(pid: int) -> list[int]:
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children") as file:
                    pending.extend(int(child) for child in file.read().split())
            except OSError:
                continue
    return found


def read_stat(pid: int, stat: str) -> float:
    """One figure of ``pid`` and its descendants now: "cpu" (CPU seconds used so far, user +
    system), "rss" (resident bytes), "threads", "fds" (open file descriptors)."""
    if not alive(pid):
        raise ProcessGone(f"process {pid} exited")
    total = 0.0
    for member in tree(pid):
        value = _member_stat(member, stat)
        if value is None and member == pid:
            raise ProcessGone(f"process {pid} exited")
        total += value or 0.0
    return total


def _member_stat(pid: int, stat: str) -> float | None:
    if stat == "cpu" or stat == "threads":
        fields = _stat(pid)
        if fields is None:
            return None
        if stat == "threads":
            return float(fields[17])  # num_threads: field 20 of /proc/PID/stat
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime: fields 14, 15
    if stat == "rss":
        try:
            with open(f"/proc/{pid}/statm") as file:
                return float(int(file.read().split()[1]) * PAGE_SIZE)
        except (OSError, IndexError, ValueError):
            return None
    if stat == "fds":
        try:
            return float(len(os.listdir(f"/proc/{pid}/fd")))
        except OSError:
            return None
    raise ValueError(f"unknown process stat {stat!r}")


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name: [state, ppid, ...] (field 3 onwards)."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            text = file.read()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def _start_time(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[19]) if fields is not None else 2**63  # starttime: field 22


def _pids() -> Iterator[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def _named(pid: int, name: str) -> bool:
    try:
        with open(f"/proc/{pid}/comm") as file:
            if file.read().rstrip("\n") == name[:15]:
                return alive(pid)
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            program = file.read().split(b"\0", 1)[0]
    except OSError:
        return False
    return os.path.basename(os.fsdecode(program)) == name and alive(pid)


def _listening_inodes(port: int) -> Iterator[int]:
    for table in _PROC_TCP:
        try:
            with open(table) as file:
                lines = file.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _TCP_LISTEN:
                continue
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                yield int(fields[9])


def _fd_links(pid: int) -> Sequence[str]:
    directory = f"/proc/{pid}/fd"
    try:
        entries = os.listdir(directory)
    except OSError:
        return ()
    links = []
    for entry in entries:
        try:
            links.append(os.readlink(f"{directory}/{entry}"))
        except OSError:
            continue
    return links
