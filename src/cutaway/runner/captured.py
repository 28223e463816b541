"""What cutaway keeps of the output of the shell code it runs around runs (hooks, metric
commands, ``version_command``, bisect's builds). The output is read from a pipe as it comes
(:class:`OutputPipes`, looked at by :func:`cutaway.runner.hooks.run_in_group` while it waits
for the command) and only the part its caller uses is kept: the first
``head_bytes``, the last ``tail_bytes`` and the count of all. The rest is read and dropped, so
that a command that prints without end (``yes``) costs neither disk nor memory, and never
blocks on a full pipe either."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterable

from cutaway import interrupts

UTF8_CONTINUATION_MASK = 0xC0
UTF8_CONTINUATION = 0x80
UTF8_LONGEST_BYTES = 4
READ_CHUNK_BYTES = 64 * 1024
# At most this much is read from one pipe at one look: a process that prints faster than it is
# read must not hold the wait (a look for interrupts, the time limit, the shell's exit).
READ_LIMIT_BYTES = 1024 * 1024


class Captured:
    """One output stream of a command: its first ``head_bytes``, its last ``tail_bytes`` and
    how many bytes it printed in all."""

    def __init__(self, *, head_bytes: int = 0, tail_bytes: int = 0) -> None:
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.head = bytearray()
        self.tail = bytearray()
        self.total_bytes = 0

    def add(self, data: bytes) -> None:
        self.total_bytes += len(data)
        room_bytes = self.head_bytes - len(self.head)
        if room_bytes > 0:
            self.head += data[:room_bytes]
        if not self.tail_bytes:
            return
        if len(data) >= self.tail_bytes:
            self.tail[:] = data[-self.tail_bytes :]
            return
        self.tail += data
        excess_bytes = len(self.tail) - self.tail_bytes
        if excess_bytes > 0:
            del self.tail[:excess_bytes]

    @property
    def truncated(self) -> bool:
        """Whether the command printed more than the head keeps."""
        return self.total_bytes > self.head_bytes

    def head_text(self) -> str:
        """The head, decoded (an undecodable byte becomes U+FFFD)."""
        return self.head.decode(errors="replace")

    def tail_text(self) -> str:
        """The tail, decoded; when the output was longer, without the pieces of a character
        cut at its start (which would show as U+FFFD)."""
        tail = bytes(self.tail)
        if self.total_bytes > len(tail):
            skipped = 0
            while (
                skipped < min(len(tail), UTF8_LONGEST_BYTES - 1)
                and tail[skipped] & UTF8_CONTINUATION_MASK == UTF8_CONTINUATION
            ):
                skipped += 1
            tail = tail[skipped:]
        return tail.decode(errors="replace")


class OutputPipes:
    """The read ends of a command's output pipes (non-blocking), each with what keeps its
    output."""

    def __init__(self) -> None:
        self.captured: dict[int, Captured] = {}

    def open_pipe(self, captured: Captured) -> int:
        """A new pipe read into ``captured``: its write end, for the command."""
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        self.captured[read_end] = captured
        return write_end

    def read_ends(self) -> list[int]:
        return list(self.captured)

    def read(self, read_ends: Iterable[int]) -> None:
        """Read what waits in these pipes, up to READ_LIMIT_BYTES from each; one whose every
        write end is closed is closed."""
        for read_end in read_ends:
            if read_end in self.captured:
                self._read_one(read_end)

    def read_waiting(self) -> None:
        self.read(self.read_ends())

    def _read_one(self, read_end: int) -> None:
        read_bytes = 0
        while read_bytes < READ_LIMIT_BYTES:
            try:
                data = os.read(read_end, READ_CHUNK_BYTES)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                del self.captured[read_end]
                os.close(read_end)
                return
            self.captured[read_end].add(data)
            read_bytes += len(data)

    def close(self) -> None:
        """Once the command's shell is gone: read what waits in the pipes, without waiting for
        more. A pipe still open for writing (a process the shell left behind holds it) is
        handed to a thread that reads and drops what comes until it closes."""
        self.read_waiting()
        for read_end in self.read_ends():
            del self.captured[read_end]
            _discard_in_background(read_end)


def _discard_in_background(read_end: int) -> None:
    """Read and drop what comes through ``read_end`` until every write end is closed, in a
    thread: the process left behind (a daemon a hook started) must neither block on a full pipe
    nor die of SIGPIPE, as it would if the read end were closed. The thread starts with the
    interrupting signals blocked, so that the kernel gives them to the main thread."""
    thread = threading.Thread(
        target=_discard_until_closed, args=(read_end,), name="cutaway-hook-output", daemon=True
    )
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, interrupts.STOP_SIGNALS)
    try:
        thread.start()
    except BaseException:
        os.close(read_end)
        raise
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)


def _discard_until_closed(read_end: int) -> None:
    try:
        os.set_blocking(read_end, True)
        while os.read(read_end, READ_CHUNK_BYTES):
            pass
    except OSError:
        pass
    finally:
        os.close(read_end)
