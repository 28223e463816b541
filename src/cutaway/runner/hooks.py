"""The unmeasured commands around a variant's runs: setup, prepare, conclude, cleanup.

Hooks always run through ``/bin/sh -c`` with the variant's environment and directory. Their
output goes to a pipe that the wait for the hook reads as it comes, keeping only its last
OUTPUT_TAIL_BYTES (:class:`~cutaway.runner.captured.Captured`): a hook that prints without end
(``yes``) fills neither the disk nor the memory, and never blocks on a full pipe. The wait ends
when the hook's shell exits, not when the pipe closes: a hook that starts a daemon (``nscd``,
``slapd``) leaves it holding whatever stdout it inherited, and what such a process prints
afterwards is read and dropped by a thread until it closes its end (it must neither block on a
full pipe nor die of SIGPIPE). Each hook runs in a process group of its own, so that the Ctrl-C
that interrupts an experiment does not also kill the cleanup that must follow it.

Every hook has a time limit (``hook_timeout``, generous by default): at it, the hook's whole
process group is stopped (SIGTERM, then SIGKILL) and the hook counts as failed. An interrupt
(Ctrl-C, SIGTERM, SIGHUP) that arrives while any hook runs stops its group within a second
(SIGTERM, then SIGKILL): nothing waits for a hook once the user asked to stop. The hooks that
restore the system (``cleanup``) are not stopped by the first interrupt: given a
:class:`Restoring`, they run to their end (bounded by the time limit), and the first interrupt
is announced with the word that another one stops them; an interrupt that comes after that
announcement stops the one running within a second (and the runner runs none after it). An
interrupt received (and held) just before a ``setup`` or ``prepare`` hook starts stops it as one
received while it runs would: the runner looks for interrupts before it calls a hook, and one
that lands between that look and the hook's start must not wait for the whole hook."""

from __future__ import annotations

import functools
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable

from cutaway import interrupts
from cutaway.model import Variant
from cutaway.runner.captured import Captured, OutputPipes
from cutaway.runner.executor import SHELL
from cutaway.value_class import value_class
from cutaway.variant_environment import run_environment

HOOK_NAMES = ("setup", "prepare", "conclude", "cleanup")
# The hooks that come before the work they serve: not worth starting once the user asked to
# stop. conclude and cleanup undo what those did, so they run even then.
HOOKS_BEFORE = ("setup", "prepare")
# The hooks that restore the system once a variant is done (Restoring: the first interrupt
# does not stop them). conclude, after each run, is stopped by any interrupt, as the others.
HOOKS_RESTORING = ("cleanup",)
OUTPUT_TAIL_BYTES = 2000
GRACE_SECONDS = 2.0  # between SIGTERM and SIGKILL when a hook's group is stopped at its limit
INTERRUPT_GRACE_SECONDS = 0.5  # the same at an interrupt: within a second of it
WAIT_SLICE_SECONDS = 0.05  # how often a hook's wait looks for an interrupt
ANNOUNCE_AFTER_SECONDS = 0.5  # a restoring hook still running then: the interrupt is announced
TIMED_OUT = -1  # HookResult.exit_code of a hook stopped at its time limit
STOPPED = -2  # HookResult.exit_code of a hook stopped by an interrupt


class Restoring:
    """When an interrupt stops the hooks that restore (cleanup): not the first one, which is
    announced instead (``announce``, once, with the hook's name and variant, or by the caller
    before the cleanups start: mark_announced); any that comes after the announcement. One per
    experiment."""

    def __init__(self, announce: Callable[[str, str], None]) -> None:
        self.announce = announce
        self.announced_at: int | None = None  # the interrupt count when announced

    def mark_announced(self) -> None:
        """The caller announced the restoring hooks itself (the list of cleanups to come)."""
        if self.announced_at is None:
            self.announced_at = interrupts.count()

    def stopped(self) -> bool:
        """Whether an interrupt came after the announcement: the restoring hooks stop."""
        return self.announced_at is not None and interrupts.count() > self.announced_at

    def stops(self, variant: str, hook: str, started_at: float) -> bool:
        """Looked at while a restoring hook runs: announces an interrupt received once the
        hook has run ANNOUNCE_AFTER_SECONDS (a quick cleanup is not worth a line), and says
        whether the hook stops now. Until the announcement no interrupt stops it: a Ctrl-C
        pressed twice must not skip the cleanup before the user was told what a second one
        does."""
        if (
            self.announced_at is None
            and interrupts.count()
            and time.monotonic() - started_at >= ANNOUNCE_AFTER_SECONDS
        ):
            self.announced_at = interrupts.count()
            self.announce(variant, hook)
        return self.stopped()


@value_class
class HookResult:
    """How one hook ended, and the tail of what it printed."""

    hook: str
    command: str
    exit_code: int  # TIMED_OUT, STOPPED when stopped at the time limit, by an interrupt
    output: str  # the tail of stdout and stderr together
    timeout_seconds: float | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def timed_out(self) -> bool:
        return self.exit_code == TIMED_OUT

    @property
    def stopped(self) -> bool:
        return self.exit_code == STOPPED

    def outcome(self) -> str:
        """How it ended, for messages: "exited with status 3", "timed out after 600 s"."""
        if self.timed_out:
            return f"timed out after {self.timeout_seconds:g} s (its process group was stopped)"
        if self.stopped:
            return "was stopped by an interrupt (with its process group)"
        return f"exited with status {self.exit_code}"


def hook_command(variant: Variant, hook: str) -> str | None:
    if hook not in HOOK_NAMES:
        raise ValueError(f"unknown hook {hook!r}")
    command: str | None = getattr(variant.hooks, hook)
    return command


def run_hook(
    variant: Variant,
    hook: str,
    *,
    timeout_seconds: float | None = None,
    restoring: Restoring | None = None,
) -> HookResult | None:
    """Run one hook of a variant and wait for it, at most ``timeout_seconds``; None when the
    variant has no such hook. An interrupt (Ctrl-C, SIGTERM, SIGHUP) that arrives while it runs
    stops its process group at once (SIGTERM, SIGKILL INTERRUPT_GRACE_SECONDS later): the hook
    then counts as stopped (HookResult.stopped), and the interrupt is raised where the caller
    lets it be (cutaway.interrupts). A cleanup hook given ``restoring`` is stopped only when it
    says so (see Restoring)."""
    command = hook_command(variant, hook)
    if command is None:
        return None
    stops = None
    if restoring is not None and hook in HOOKS_RESTORING:
        stops = functools.partial(restoring.stops, variant.name, hook, time.monotonic())
    output = Captured(tail_bytes=OUTPUT_TAIL_BYTES)
    exit_code = run_in_group(
        [SHELL, "-c", command],
        output,
        env=run_environment(variant),
        cwd=variant.cwd,
        timeout_seconds=timeout_seconds,
        stopped_by_pending=hook in HOOKS_BEFORE,
        stops=stops,
    )
    return HookResult(hook, command, exit_code, output.tail_text().strip(), timeout_seconds)


@interrupts.holding
def run_in_group(
    argv: list[str],
    output: Captured,
    *,
    errors: Captured | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    timeout_seconds: float | None = None,
    stopped_by_pending: bool = False,
    stops: Callable[[], bool] | None = None,
) -> int:
    """Run ``argv`` in a process group of its own, stdout (and stderr, unless ``errors``) to a
    pipe read into ``output`` while it runs, and wait for it: its exit status (negative: killed
    by that signal), or TIMED_OUT or STOPPED after stopping its whole group at
    ``timeout_seconds`` or at an interrupt that arrived meanwhile. That interrupt is then
    raised where the caller lets it be (cutaway.interrupts); anything else that stops the wait
    stops the group too. With ``stopped_by_pending``, an interrupt received before the call and
    still held counts as one received meanwhile; with ``stops``, the group is stopped when it
    says so instead (a restoring hook). Used by hooks, bisect's builds and metric commands."""
    with interrupts.handling():
        # Counted inside handling(): its outermost call resets the count.
        interrupts_before = interrupts.count()
        if stopped_by_pending and interrupts.pending():
            interrupts_before -= 1
        pipes = OutputPipes()
        try:
            process = _start(argv, pipes, output, errors, env, cwd)
            if stops is None:
                stops = functools.partial(_interrupted_since, interrupts_before)
            try:
                exit_code = _wait(process, timeout_seconds, stops, pipes)
            except BaseException:
                stop_group(process, INTERRUPT_GRACE_SECONDS, pipes.read_waiting)
                raise
        finally:
            pipes.close()
    interrupts.check_for_caller()
    return exit_code


def _start(
    argv: list[str],
    pipes: OutputPipes,
    output: Captured,
    errors: Captured | None,
    env: dict[str, str] | None,
    cwd: str | None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with its output to the pipes, which only it then holds open for writing.
    Interrupts are held from before Popen (by the caller): an interrupt while Popen starts the
    command (which may already run) must not leave it behind; the wait sees it and stops the
    group."""
    write_ends = [pipes.open_pipe(output)]
    if errors is not None:
        write_ends.append(pipes.open_pipe(errors))
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=write_ends[0],
            stderr=subprocess.STDOUT if errors is None else write_ends[1],
            env=env,
            cwd=cwd,
            process_group=0,
        )
    finally:
        for write_end in write_ends:
            os.close(write_end)


def _interrupted_since(interrupts_before: int) -> bool:
    return interrupts.count() > interrupts_before


def _wait(
    process: subprocess.Popen[bytes],
    timeout_seconds: float | None,
    stops: Callable[[], bool],
    pipes: OutputPipes,
) -> int:
    """The hook's exit status; TIMED_OUT or STOPPED after stopping its group at its time limit
    or once ``stops`` says so (an interrupt came). A pidfd says when the shell exits (not the
    pipes' end, which a process the shell left behind may hold open); the pipes are read as
    they fill; ``stops`` is asked every WAIT_SLICE_SECONDS at least."""
    deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
    pidfd = os.pidfd_open(process.pid)
    try:
        while True:
            if stops():
                stop_group(process, INTERRUPT_GRACE_SECONDS, pipes.read_waiting)
                return STOPPED
            left = WAIT_SLICE_SECONDS
            if deadline is not None:
                left = min(left, deadline - time.monotonic())
                if left <= 0:
                    stop_group(process, GRACE_SECONDS, pipes.read_waiting)
                    return TIMED_OUT
            readable, _, _ = select.select([pidfd, *pipes.read_ends()], [], [], left)
            if pidfd in readable:
                return reap(process)
            pipes.read(readable)
    finally:
        os.close(pidfd)


def reap(
    process: subprocess.Popen[bytes],
    timeout_seconds: float | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> int:
    """Wait for a hook's shell after an interrupt, without Popen.wait: an interrupt that lands
    inside Popen.wait can leave its internal lock held (https://bugs.python.org/issue29988,
    a signal between a lock's acquire and the ``with`` that releases it), and any later
    Popen.wait then blocks for ever. Raises subprocess.TimeoutExpired after
    ``timeout_seconds``. ``meanwhile`` is called between looks (to read the hook's output, so
    that it does not block on a full pipe while it handles SIGTERM)."""
    deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
    while process.returncode is None:
        try:
            pid, status = os.waitpid(process.pid, 0 if deadline is None else os.WNOHANG)
        except ChildProcessError:  # reaped already (by Popen, just before the interrupt)
            process.returncode = process.returncode if process.returncode is not None else -1
            break
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
        elif deadline is not None and time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(process.args, timeout_seconds or 0.0)
        else:
            if meanwhile is not None:
                meanwhile()
            time.sleep(0.01)
    return process.returncode


@interrupts.holding
def stop_group(
    process: subprocess.Popen[bytes],
    grace_seconds: float = GRACE_SECONDS,
    meanwhile: Callable[[], None] | None = None,
) -> None:
    """Stop a hook's whole process group: SIGTERM, then SIGKILL after ``grace_seconds``; reap
    it (calling ``meanwhile`` between looks, see reap). Interrupts are held meanwhile: a second
    Ctrl-C must not leave the group running."""
    _stop_group(process, grace_seconds, meanwhile)


def _stop_group(
    process: subprocess.Popen[bytes], grace_seconds: float, meanwhile: Callable[[], None] | None
) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            reap(process, grace_seconds, meanwhile)
            # The shell is gone; what it left in its group goes too.
            os.killpg(process.pid, signal.SIGKILL)
            break
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            break
    reap(process)
