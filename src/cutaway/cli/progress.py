"""The terminal's view of a running experiment: a progress bar with the time left (on a
terminal only) and notices on stderr. It only listens to runner events."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from rich.console import Console

from cutaway import events
from cutaway.visible import visible

if TYPE_CHECKING:  # rich.progress is imported only when a bar is drawn
    from rich.progress import Progress, TaskID


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
    ) -> None:
        """``bar``: draw the progress bar (None: on a terminal only; True: even elsewhere, as
        hyperfine's --style full). ``lines``: print notices (False: --quiet, --style none); what
        an error kept and how to resume are printed all the same. ``db_option``: `` --db PATH``
        in the resume command, when the store is not the default one."""
        self.stream = stream or sys.stderr
        self.db_option = db_option
        self.enabled = self.stream.isatty() if bar is None else bar
        self.lines = lines
        self.console = Console(
            file=self.stream,
            highlight=False,
            emoji=False,  # a name holding ":warning:" prints as itself
            soft_wrap=True,
            force_terminal=True if bar else None,
            no_color=None if color is None else not color,
        )
        self.progress: Progress | None = None
        self.task: TaskID | None = None

    def __enter__(self) -> TerminalProgress:
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("runs"),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def say(self, message: str) -> None:
        """One line per message, whatever a name or a command's stderr in it holds: control
        characters and newlines shown escaped, markup and emoji codes printed as themselves."""
        if self.lines:
            self.console.print(visible(message), markup=False, emoji=False)

    def __call__(self, event: events.Event) -> None:
        if isinstance(event, events.ExperimentStarted):
            verb = "resuming" if event.resumed_runs else "running"
            self.say(
                f"cutaway: {verb} experiment #{event.experiment_id} {event.name!r}: "
                f"{len(event.variants)} variants x {event.planned_rounds} rounds "
                f"(+{event.warmup_rounds} warmup)"
            )
            if self.progress is not None:
                total = len(event.variants) * (event.planned_rounds + event.warmup_rounds)
                self.task = self.progress.add_task("measuring", total=total - event.resumed_runs)
        elif isinstance(event, events.RunFinished):
            if self.progress is not None and self.task is not None:
                self.progress.update(
                    self.task,
                    completed=event.runs_done,
                    total=max(event.runs_planned, event.runs_done),
                )
            if not event.run.ok:
                self.say(
                    f"cutaway: run of {event.run.variant!r} in round "
                    f"{event.run.round_index}: {event.run.status.value}: {event.run.message}"
                )
        elif isinstance(event, events.CalibrationDone):
            c = event.calibration
            self.say(
                f"cutaway: harness overhead {c.median_wall_seconds * 1e6:.0f} µs per run "
                f"(median of {c.n} runs of `{c.command}`)"
            )
        elif isinstance(event, events.Notice):
            self.say(f"cutaway: {event.message}")
        elif isinstance(event, events.HookRan) and event.exit_code != 0:
            self.say(f"cutaway: {event.hook} hook of {event.variant!r} exited {event.exit_code}")
        elif isinstance(event, events.ExperimentFinished) and event.status != "complete":
            self.stopped(event)

    def stopped(self, event: events.ExperimentFinished) -> None:
        """What an experiment that stopped before its end kept, and how to continue it. After
        an error this is part of the error message: it is printed even under --quiet."""
        why = "stopped by the error below" if event.reason == "error" else event.reason
        message = (
            f"cutaway: experiment #{event.experiment_id} is incomplete ({why}): "
            f"{event.runs_kept} runs in {event.rounds_kept} complete rounds are stored; "
            f"`cutaway run --resume {event.experiment_id}{self.db_option}` continues it"
        )
        if event.status == "running":
            message += " (its status could not be stored: it still reads running)"
        if self.lines or event.reason == "error":
            self.console.print(visible(message), markup=False, emoji=False)
