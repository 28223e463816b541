"""What cutaway keeps of the output of the shell code it runs around runs (hooks, metric
commands, ``version_command``, bisect's builds). The output is read from a pipe as it comes
(:func:`cutaway.runner.hooks.run_in_group`) and only the part its caller uses is kept: the first
``head_bytes``, the last ``tail_bytes`` and the count of all. The rest is read and dropped, so
that a command that prints without end (``yes``) costs neither disk nor memory, and never
blocks on a full pipe either."""

from __future__ import annotations

UTF8_CONTINUATION_MASK = 0xC0
UTF8_CONTINUATION = 0x80
UTF8_LONGEST_BYTES = 4


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
