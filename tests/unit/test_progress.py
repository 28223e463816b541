"""The progress bar drawn by hand (cli/progress.py): where it is drawn, what it says, that lines
go above it, that it is gone at the end, and that nothing draws during a run."""

from __future__ import annotations

import io
import threading
import time

from cutaway import events
from cutaway.cli.progress import REDRAW_SECONDS, TerminalProgress
from cutaway.model import Calibration, Run, RunStatus

CLEAR = "\r\x1b[2K"


def _started(warmup: int = 1, resumed: int = 0) -> events.ExperimentStarted:
    return events.ExperimentStarted(7, "demo", ("a", "b"), 3, warmup, resumed)


def _finished(done: int, planned: int = 8, status: RunStatus = RunStatus.OK) -> events.RunFinished:
    run = Run("a", 0, 0, status, 0 if status is RunStatus.OK else 1, None, {}, 0.0, "boom")
    return events.RunFinished(run, done, planned, 2.0 * done)


class Clock:
    """A clock the test moves: the bar is redrawn at most every REDRAW_SECONDS."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        self.now += 10 * REDRAW_SECONDS  # each look at the clock, well after the last one
        return self.now


def test_the_bar_counts_runs_and_estimates_the_time_left() -> None:
    stream = io.StringIO()
    with TerminalProgress(stream, bar=True, color=False, clock=Clock()) as progress:
        progress(_started())
        assert stream.getvalue().endswith("0/8 runs -:--:--")
        progress(_finished(2))
        # 2 runs in 4 s: 6 more take 12 s.
        assert stream.getvalue().endswith("2/8 runs 0:00:12")
        assert "measuring ━" in stream.getvalue()
    assert stream.getvalue().endswith(CLEAR)  # removed, the report follows where it was


def test_a_resumed_experiment_counts_only_the_runs_left() -> None:
    stream = io.StringIO()
    with TerminalProgress(stream, bar=True, color=False) as progress:
        progress(_started(warmup=0, resumed=2))
    assert "0/4 runs" in stream.getvalue()


def test_lines_print_above_the_bar_which_is_drawn_again() -> None:
    stream = io.StringIO()
    with TerminalProgress(stream, bar=True, color=False, clock=Clock()) as progress:
        progress(_started())
        progress(_finished(1, status=RunStatus.FAILED))
        text = stream.getvalue()
    failed = text.index("cutaway: run of 'a' in round 0: failed: boom\n")
    assert text[:failed].endswith(CLEAR)  # the bar was erased first: the line starts clean
    assert "1/8 runs" in text[failed:]


def test_colour_is_only_on_request() -> None:
    plain, coloured = io.StringIO(), io.StringIO()
    for stream, color in ((plain, False), (coloured, True)):
        with TerminalProgress(stream, bar=True, color=color) as progress:
            progress(_started())
    assert "\x1b[1m" not in plain.getvalue()
    assert "\x1b[1mmeasuring" in coloured.getvalue()


def test_no_bar_off_a_terminal_unless_asked() -> None:
    stream = io.StringIO()  # not a terminal
    with TerminalProgress(stream) as progress:
        progress(_started())
        progress(_finished(1))
    assert "runs" not in stream.getvalue().replace("x 3 rounds", "")
    assert CLEAR not in stream.getvalue()


def test_nothing_draws_between_events() -> None:
    """No thread, no timer: the bar changes only when the runner reports, between runs."""
    before = threading.active_count()
    stream = io.StringIO()
    with TerminalProgress(stream, bar=True, color=False) as progress:
        progress(_started())
        assert threading.active_count() == before
        drawn = stream.getvalue()
        threading.Event().wait(0.25)  # a refreshing display would redraw meanwhile
        assert stream.getvalue() == drawn


def test_runs_that_finish_within_a_tenth_of_a_second_redraw_the_bar_once() -> None:
    """Thousands of short runs: the terminal is written to ten times a second, not after
    each run; the last run of the experiment is drawn all the same."""
    stream = io.StringIO()
    moments = iter([0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.5])

    with TerminalProgress(stream, bar=True, color=False, clock=lambda: next(moments)) as progress:
        progress(_started())  # drawn at 0.0
        for done in range(1, 7):
            progress(_finished(done))  # at 0.01 .. 0.06: not drawn
        assert stream.getvalue().endswith("0/8 runs -:--:--")
        progress(_finished(8))  # the last run: drawn
        assert stream.getvalue().endswith("8/8 runs 0:00:00")


def test_a_failed_warmup_run_is_said_as_the_warmup_not_round_minus_one() -> None:
    stream = io.StringIO()
    run = Run("a", -1, 0, RunStatus.FAILED, 3, None, {}, 0.0, "exit status 3")
    with TerminalProgress(stream, bar=False) as progress:
        progress(events.RunFinished(run, 1, 8, 0.1))
    assert "cutaway: run of 'a' in its warmup run: failed: exit status 3" in stream.getvalue()
    assert "round -1" not in stream.getvalue()


def test_an_experiment_that_measured_nothing_is_not_said_to_continue() -> None:
    stream = io.StringIO()
    with TerminalProgress(stream, bar=False) as progress:
        progress(events.ExperimentFinished(7, "incomplete", "error", 0, 0))
        progress(events.ExperimentFinished(8, "incomplete", "error", 4, 2))
    nothing, some = stream.getvalue().splitlines()
    assert "#7 measured nothing (stopped by the error below)" in nothing
    assert "once that is fixed, `cutaway run --resume 7` runs it" in nothing
    assert "continues it" not in nothing
    assert "4 runs in 2 complete rounds are stored" in some and "continues it" in some


def test_the_harness_figure_says_how_it_was_measured() -> None:
    """Measured now, or reused from an earlier measurement on this machine, and when (local
    time)."""
    calibration = Calibration("true", 100, 0.001031, 0.0009)
    measured_at = 1_795_763_940.0  # 2026-11-27 07:19 UTC
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(measured_at))
    stream = io.StringIO()
    with TerminalProgress(stream, bar=False, color=False) as progress:
        progress(events.CalibrationDone(calibration, measured_at, reused=False))
        progress(events.CalibrationDone(calibration, measured_at, reused=True))
    now, reused = stream.getvalue().splitlines()
    assert now == "cutaway: harness overhead 1031 µs per run (median of 100 runs of `true`)"
    assert reused == (
        "cutaway: harness overhead 1031 µs per run (median of 100 runs of `true`, measured "
        f"{when} on this machine and reused)"
    )
