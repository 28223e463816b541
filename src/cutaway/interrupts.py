"""Ctrl-C, SIGTERM and SIGHUP: each stops a command, which exits with 128 + the signal's number
(130, 143, 129), as a shell reports a command killed by it. No other cutaway module is imported
here.

A handler that raises wherever the signal lands leaves windows: between a store's BEGIN and its
COMMIT, between a run's end and the line that stores it, between storing a run and counting it.
So the handler raises only where the code has said it may (:func:`raising`, and everywhere
outside :func:`held`); elsewhere it records the signal, and the code raises it at the points
it chooses (:func:`check`, the end of a held section, the start of a raising one). A wait that
must end at an interrupt while held (a hook) polls :func:`count`.

A signal ignored when cutaway started (SIGINT and SIGHUP under ``nohup``, SIGINT in a
background job of a non-interactive shell) stays ignored, as every command-line tool does."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_RAISING, _HELD = "raising", "held"


class Stopped(KeyboardInterrupt):
    """Raised in the main thread by an interrupting signal (a KeyboardInterrupt, so that
    whatever stops at Ctrl-C stops at SIGTERM and SIGHUP too)."""

    def __init__(self, signal_number: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signal_number).name)
        self.signal_number = signal_number


class _Gate:
    def __init__(self) -> None:
        self.modes: list[str] = []  # innermost last; none: raising
        self.received: list[int] = []  # every interrupting signal, in order
        self.pending: int | None = None  # received while held, not raised yet
        self.installed = 0  # nesting depth of handling()

    def raises_now(self) -> bool:
        return not self.modes or self.modes[-1] == _RAISING

    def handle(self, signal_number: int, frame: FrameType | None) -> None:
        self.received.append(signal_number)
        if self.raises_now():
            self.pending = None
            raise Stopped(signal_number)
        if self.pending is None:
            self.pending = signal_number

    def deliver(self) -> None:
        """Raise the pending interrupt, once."""
        if self.pending is not None:
            number, self.pending = self.pending, None
            raise Stopped(number)


_gate = _Gate()
Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


@contextmanager
def handling() -> Iterator[None]:
    """Interrupting signals handled here (outermost call: handlers installed, records reset;
    inner calls change nothing). Only the main thread may install handlers: elsewhere this
    does nothing, and signals go to the main thread's handlers anyway."""
    if _gate.installed:
        _gate.installed += 1
        try:
            yield
        finally:
            _gate.installed -= 1
        return
    previous: dict[signal.Signals, Handler] = {}
    try:
        for stop_signal in STOP_SIGNALS:
            if signal.getsignal(stop_signal) is not signal.SIG_IGN:
                previous[stop_signal] = signal.signal(stop_signal, _gate.handle)
    except ValueError:  # not the main thread
        pass
    _gate.received.clear()
    _gate.pending = None
    _gate.installed = 1
    try:
        yield
    finally:
        _gate.installed = 0
        for stop_signal, handler in previous.items():
            signal.signal(stop_signal, handler)


@contextmanager
def held() -> Iterator[None]:
    """Interrupts received inside are recorded, not raised; the first is raised when the
    section ends without an exception into code that may be interrupted (or at a
    :func:`check` inside)."""
    _gate.modes.append(_HELD)
    try:
        yield
    finally:
        _gate.modes.pop()
    if _gate.raises_now():
        _gate.deliver()


@contextmanager
def raising() -> Iterator[None]:
    """Inside a held section, a part that an interrupt may stop at any point (a wait for a
    process): a pending interrupt is raised on entry, a new one where it lands."""
    _gate.deliver()
    _gate.modes.append(_RAISING)
    try:
        yield
    finally:
        _gate.modes.pop()


def check() -> None:
    """Raise the interrupt received while held, if any: a point where stopping is safe."""
    _gate.deliver()


def pending() -> bool:
    return _gate.pending is not None


def count() -> int:
    """How many interrupting signals were received so far (a wait compares two counts)."""
    return len(_gate.received)


def first_signal() -> int | None:
    """The first interrupting signal received (its number decides the exit status)."""
    return _gate.received[0] if _gate.received else None


def exit_status(error: BaseException | None = None) -> int:
    """128 + the number of the signal that stopped the command: the first one received, else
    the one ``error`` carries, else SIGINT's (a KeyboardInterrupt raised by Python itself)."""
    number = first_signal()
    if number is None:
        number = error.signal_number if isinstance(error, Stopped) else signal.SIGINT
    return 128 + number


def discard() -> bool:
    """Forget a pending interrupt (the caller is stopping anyway); whether there was one."""
    had = _gate.pending is not None
    _gate.pending = None
    return had
