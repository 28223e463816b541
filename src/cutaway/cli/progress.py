"""The terminal's view of a running experiment: a progress bar with the time left (on a
terminal only) and notices on stderr. It only listens to runner events.

The bar is drawn by hand, not by rich.progress: it is redrawn only when a run finishes, between
two runs, never during one, and at most every REDRAW_SECONDS: a session of thousands of short
runs would otherwise write to the terminal (and make it draw) after every one of them. A
refreshing display (rich's redraws ten times a second from a thread of its own) would wake
cutaway, take the GIL and make the terminal draw while the measured command runs; and
rich.console alone costs tens of milliseconds of start-up before the first run
(docs/performance.md)."""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from collections.abc import Callable
from typing import TextIO

from cutaway import events
from cutaway.runner.hooks import STOPPED, TIMED_OUT
from cutaway.visible import display, visible

WIDTH_FALLBACK = 80  # a terminal that reports 0 columns (CI pseudo-terminals) gets 80
_CLEAR_LINE = "\r\x1b[2K"
_BOLD, _DONE, _TODO, _RESET = "\x1b[1m", "\x1b[38;5;197m", "\x1b[38;5;237m", "\x1b[0m"
_BAR_MIN, _BAR_MAX = 10, 40
REDRAW_SECONDS = 0.1  # the bar changes at most ten times a second

HOOK_ENDINGS = {TIMED_OUT: "timed out", STOPPED: "was stopped by an interrupt"}
_UNSHOWN = (events.RunStarted, events.RoundFinished)  # nothing to show for these


class TerminalProgress:
    """A runner listener. Use as a context manager so the bar is removed when done."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        bar: bool | None = None,
        lines: bool = True,
        color: bool | None = None,
        db_option: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``bar``: draw the progress bar (None: on a terminal only; True: even elsewhere, as
        hyperfine's --style full). ``lines``: print notices (False: --quiet, --style none); what
        an error kept and how to resume are printed all the same. ``color``: None colours the
        bar on a terminal without NO_COLOR. ``db_option``: `` --db PATH`` in the resume
        command, when the store is not the default one."""
        self.stream = stream or sys.stderr
        self.db_option = db_option
        self.enabled = self.stream.isatty() if bar is None else bar
        self.lines = lines
        if color is None:
            color = self.stream.isatty() and not os.environ.get("NO_COLOR")
        self.color = color
        self.total: int | None = None  # runs the bar counts to, once the experiment started
        self.done = 0
        self.elapsed = 0.0
        self.drawn = False
        self.clock = clock
        self.drawn_at = -math.inf  # clock() when the bar was last drawn

    def __enter__(self) -> TerminalProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self._erase()  # transient: the report follows where the bar was

    def say(self, message: str) -> None:
        """One line per message, whatever a name or a command's stderr in it holds: control
        characters and newlines shown escaped."""
        if self.lines:
            self._print(visible(message))

    def _print(self, line: str) -> None:
        """A line above the bar: the bar is erased, the line printed, the bar drawn again."""
        redraw = self.drawn
        self._erase()
        self._write(line + "\n")
        if redraw:
            self._draw()

    def _write(self, text: str) -> None:
        self.stream.write(text)  # a closed stderr is handled by cli/streams.py
        self.stream.flush()

    def _erase(self) -> None:
        if self.drawn:
            self._write(_CLEAR_LINE)
            self.drawn = False

    def _draw(self) -> None:
        if not self.enabled or self.total is None:
            return
        total = max(self.total, self.done, 1)
        columns = shutil.get_terminal_size((WIDTH_FALLBACK, 24)).columns or WIDTH_FALLBACK
        counts = f"{self.done}/{total} runs"
        left = self._time_left(total)
        width = max(_BAR_MIN, min(_BAR_MAX, columns - len(counts) - len(left) - 14))
        filled = width * self.done // total
        if self.color:
            bar = f"{_DONE}{'━' * filled}{_TODO}{'━' * (width - filled)}{_RESET}"
            text = f"{_BOLD}measuring{_RESET} {bar} {counts} {left}"
        else:
            text = f"measuring {'━' * filled}{' ' * (width - filled)} {counts} {left}"
        self._write(_CLEAR_LINE + text)
        self.drawn = True
        self.drawn_at = self.clock()

    def _time_left(self, total: int) -> str:
        if self.done == 0:
            return "-:--:--"
        seconds = round(self.elapsed / self.done * (total - self.done))
        return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"

    def __call__(self, event: events.Event) -> None:
        if isinstance(event, _UNSHOWN):  # first: two of the three events of every run
            return
        if isinstance(event, events.ExperimentStarted):
            verb = "resuming" if event.resumed_runs else "running"
            self.say(
                f"cutaway: {verb} experiment #{event.experiment_id} {display(event.name)!r}: "
                f"{len(event.variants)} variants x {event.planned_rounds} rounds "
                f"(+{event.warmup_rounds} warmup)"
            )
            total = len(event.variants) * (event.planned_rounds + event.warmup_rounds)
            self.total = total - event.resumed_runs
            self._draw()
        elif isinstance(event, events.RunFinished):
            self.done, self.elapsed = event.runs_done, event.seconds_elapsed
            self.total = max(event.runs_planned, event.runs_done)
            if not event.run.ok:
                where = (  # warmup rounds are numbered below 0 inside; a reader knows "warmup"
                    f"round {event.run.round_index}"
                    if event.run.round_index >= 0
                    else "its warmup run"
                )
                self.say(
                    f"cutaway: run of {display(event.run.variant)!r} in {where}: "
                    f"{event.run.status.value}: {event.run.message}"
                )
            if self.clock() - self.drawn_at >= REDRAW_SECONDS or self.done >= self.total:
                self._draw()
        elif isinstance(event, events.CalibrationDone):
            self.say(calibration_notice(event))
        elif isinstance(event, events.Notice):
            self.say(f"cutaway: {event.message}")
        elif isinstance(event, events.HookRan) and event.exit_code != 0:
            how = HOOK_ENDINGS.get(event.exit_code, f"exited {event.exit_code}")
            self.say(f"cutaway: {event.hook} hook of {display(event.variant)!r} {how}")
        elif isinstance(event, events.ExperimentFinished) and event.status != "complete":
            self.stopped(event)

    def stopped(self, event: events.ExperimentFinished) -> None:
        """What an experiment that stopped before its end kept, and how to continue it. After
        an error this is part of the error message: it is printed even under --quiet."""
        why = "stopped by the error below" if event.reason == "error" else event.reason
        resume = f"`cutaway run --resume {event.experiment_id}{self.db_option}`"
        if event.runs_kept == 0 and event.reason == "error":
            # Nothing measured: "continues it" would promise the same error again.
            message = (
                f"cutaway: experiment #{event.experiment_id} measured nothing ({why}); "
                f"once that is fixed, {resume} runs it"
            )
        else:
            message = (
                f"cutaway: experiment #{event.experiment_id} is incomplete ({why}): "
                f"{event.runs_kept} runs in {event.rounds_kept} complete rounds are stored; "
                f"{resume} continues it"
            )
        if event.status == "running":
            message += " (its status could not be stored: it still reads running)"
        if self.lines or event.reason == "error":
            self._print(visible(message))


def calibration_notice(event: events.CalibrationDone) -> str:
    """The harness's cost and how it was measured: now, or reused from an earlier measurement
    on this machine (cutaway.runner.calibration says when it is measured again)."""
    c = event.calibration
    how = f"median of {c.n} runs of `{c.command}`"
    if event.reused and event.measured_at is not None:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(event.measured_at))
        how += f", measured {when} on this machine and reused"
    return f"cutaway: harness overhead {c.median_wall_seconds * 1e6:.0f} µs per run ({how})"
