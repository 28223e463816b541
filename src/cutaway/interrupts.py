"""Ctrl-C, SIGTERM and SIGHUP: each stops a command, which exits with 128 + the signal's number
(130, 143, 129), as a shell reports a command killed by it. No other cutaway module is imported
here.

A handler that raises wherever the signal lands leaves windows: between a store's BEGIN and its
COMMIT, between a run's end and the line that stores it, between storing a run and counting it.
So the handler raises only where the code has said it may. A function marked :func:`holding`
holds interrupts for as long as it runs (with everything it calls): the handler records the
signal and returns, and the code raises it at the points it chooses (:func:`check`). A function
marked :func:`raising`, called from a holding one, lets it land anywhere again (a wait for a
process). Outside both, the handler raises, as Python's own does. The innermost marked function
on the interrupted frame's stack decides: the handler looks at the stack itself, so no state
can be left wrong by a signal that lands while a section is entered or left (a ``with``
statement's ``__enter__`` and ``__exit__`` are Python code, where a handler may run). A wait
that must end at an interrupt while held (a hook) polls :func:`count`.

A signal ignored when cutaway started (SIGINT and SIGHUP under ``nohup``, SIGINT in a
background job of a non-interactive shell) stays ignored, as every command-line tool does."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import TypeVar

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_RAISING, _HOLDING = "raising", "holding"
Function = TypeVar("Function", bound=Callable[..., object])


class Stopped(KeyboardInterrupt):
    """Raised in the main thread by an interrupting signal (a KeyboardInterrupt, so that
    whatever stops at Ctrl-C stops at SIGTERM and SIGHUP too)."""

    def __init__(self, signal_number: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signal_number).name)
        self.signal_number = signal_number


class _Gate:
    def __init__(self) -> None:
        self.marked: dict[CodeType, str] = {}  # the code of each marked function: its mode
        self.received: list[int] = []  # every interrupting signal, in order
        self.pending: int | None = None  # received while held, not raised yet
        self.installed = 0  # nesting depth of handling()

    def mode_at(self, frame: FrameType | None) -> str:
        while frame is not None:
            mode = self.marked.get(frame.f_code)
            if mode is not None:
                return mode
            frame = frame.f_back
        return _RAISING

    def handle(self, signal_number: int, frame: FrameType | None) -> None:
        self.received.append(signal_number)
        if self.mode_at(frame) == _RAISING:
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


def holding(function: Function) -> Function:
    """Mark ``function``: while it runs, interrupts are recorded, not raised (see the module).
    The function itself is returned: no wrapper, so no frame where a signal could land
    between the mark and the code it covers."""
    _gate.marked[function.__code__] = _HOLDING
    return function


def raising(function: Function) -> Function:
    """Mark ``function``: called from a holding one, it may be stopped where a signal lands
    (and is, on entry, by one received before)."""
    _gate.marked[function.__code__] = _RAISING
    return function


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
    held = _held_stop_signals()
    try:
        # Signals the `cutaway` command held until now (cli/main.py) are delivered here, to
        # the handlers just installed: one that came while the commands were imported stops
        # the command at once, with its own status.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
        yield
    finally:
        # The command is over: a signal that comes while the process exits must not change
        # the status it decided. Held again in this thread, and ignored, for a thread started
        # meanwhile that does not hold it (the kernel may give it a signal sent to the process).
        signal.pthread_sigmask(signal.SIG_BLOCK, held)
        _gate.installed = 0
        for stop_signal, handler in previous.items():
            signal.signal(stop_signal, signal.SIG_IGN if stop_signal in held else handler)


def _held_stop_signals() -> set[int]:
    """The stop signals this thread blocks now (cli/main.py blocks them all until handling()
    starts); none in a program that uses handling() as a library."""
    return set(signal.pthread_sigmask(signal.SIG_BLOCK, ())) & set(STOP_SIGNALS)


def check() -> None:
    """Raise the interrupt received while held, if any: a point where stopping is safe."""
    if _gate.pending is not None:  # looked at here first: a run passes half a dozen checks
        _gate.deliver()


def check_for_caller() -> None:
    """Called by a holding function just before it returns: raise the pending interrupt when
    the function's caller is not held itself (so that a holding function called from code
    that may be interrupted does not swallow the interrupt)."""
    if _gate.pending is not None and _gate.mode_at(sys._getframe(2)) == _RAISING:
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


def wrapped_interrupt(error: BaseException) -> KeyboardInterrupt | None:
    """The interrupt that ``error`` was raised from, if any. Python 3.11 wraps whatever a
    descriptor's ``__set_name__`` raises in a RuntimeError (a dataclass's field, while a module
    is imported), so an interrupt that lands there arrives as one."""
    cause = error.__cause__
    while cause is not None and not isinstance(cause, KeyboardInterrupt):
        cause = cause.__cause__
    return cause


def take() -> Stopped | None:
    """The interrupt received while held, if any, as the exception to raise later; no longer
    pending (a caller that must first keep what it has raises it then)."""
    number, _gate.pending = _gate.pending, None
    return None if number is None else Stopped(number)


def discard() -> bool:
    """Forget a pending interrupt (the caller is stopping anyway); whether there was one."""
    had = _gate.pending is not None
    _gate.pending = None
    return had
