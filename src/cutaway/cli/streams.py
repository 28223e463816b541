"""Standard output and error that outlive their reader.

`cutaway run ... 2>&1 | head -2` closes the pipe after two lines; the next write fails with
EPIPE. What is being measured matters more than who watches: the experiment must finish, be
stored and cleaned up. So while a command runs, sys.stdout and sys.stderr are wrapped: the
first BrokenPipeError on a stream points its descriptor at /dev/null (the recipe of Python's
documentation, https://docs.python.org/3/library/signal.html#note-on-sigpipe) and every later
write to it is dropped. Every writer goes through the wrappers: print, argparse, rich's
consoles (rich's own answer to a broken pipe is to exit 1), the progress bar's thread."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, cast


class PipeSafeStream:
    """A text stream that swallows a broken pipe. Any other write error (standard output on a
    full disk, or on /dev/full) ends the writing too; on standard output it is raised once, as
    OutputWriteError (exit 1, a message, no traceback), on standard error it is swallowed, as
    there is nowhere left to say it."""

    def __init__(self, stream: TextIO, name: str | None = None) -> None:
        self.wrapped = stream
        self.name = name  # for a message about a failed write; None: swallow it
        self.broken = False  # the reader has gone
        self.failed = False  # a write failed otherwise

    def write(self, text: str) -> int:
        if not (self.broken or self.failed):
            try:
                self.wrapped.write(text)
            except BrokenPipeError:
                self._give_up()
            except OSError as error:
                self._fail(error)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not (self.broken or self.failed):
            try:
                self.wrapped.flush()
            except BrokenPipeError:
                self._give_up()
            except OSError as error:
                self._fail(error)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding... as the stream's
        if name == "wrapped":  # not set yet (copy, pickle): no endless recursion
            raise AttributeError(name)
        return getattr(self.wrapped, name)

    def _fail(self, error: OSError) -> None:
        """Drop the rest, as for a broken pipe, and say why once (see the class docstring)."""
        self.failed = True
        self._point_at_null()
        if self.name is not None:
            from cutaway.output_files import OutputWriteError

            reason = error.strerror or str(error)
            raise OutputWriteError(f"cannot write {self.name}: {reason}") from None

    def _give_up(self) -> None:
        """Point the descriptor at /dev/null, so that what is still buffered, a later flush
        (at exit too) and the children that inherit it all write to nothing, without error."""
        self.broken = True  # two threads may both get here: pointing twice at /dev/null is fine
        self._point_at_null()

    def _point_at_null(self) -> None:
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.wrapped.fileno())
            os.close(devnull)
        with contextlib.suppress(OSError, ValueError):
            self.wrapped.flush()  # what was buffered goes to /dev/null


@contextlib.contextmanager
def pipe_safe_streams() -> Iterator[None]:
    """sys.stdout and sys.stderr wrapped for the duration, flushed at the end while still
    wrapped (a pipe may break only then), and put back."""
    stdout, stderr = sys.stdout, sys.stderr
    output = PipeSafeStream(_open_standard(1, stdout), "standard output")
    error = PipeSafeStream(_open_standard(2, stderr))
    sys.stdout, sys.stderr = cast(TextIO, output), cast(TextIO, error)
    try:
        yield
    finally:
        try:
            output.flush()
        except Exception as failure:  # OutputWriteError: the command failed already
            error.write(f"cutaway: {failure}\n")
        error.flush()
        sys.stdout, sys.stderr = stdout, stderr


def _open_standard(fd: int, stream: TextIO | None) -> TextIO:
    """``stream``; or, when Python found its descriptor closed at start (`cutaway run >&-`), a
    stream on /dev/null that takes the descriptor's number, so that no file opened later (the
    store) becomes descriptor 1 or 2 and receives what is printed or a command's output."""
    if stream is not None:
        return stream
    try:
        os.fstat(fd)
    except OSError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        if devnull != fd:
            os.dup2(devnull, fd)
            os.close(devnull)
        return open(fd, "w", encoding="utf-8", closefd=False)
    return open(os.devnull, "w", encoding="utf-8")


def stdout_closed() -> bool:
    """Whether standard output's reader has gone (inside pipe_safe_streams)."""
    return isinstance(sys.stdout, PipeSafeStream) and sys.stdout.broken
