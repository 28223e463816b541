"""The unmeasured commands around a variant's runs: setup, prepare, conclude, cleanup.

Hooks always run through ``/bin/sh -c`` with the variant's environment and directory. Their
output goes to a temporary file, not a pipe: a hook that starts a daemon (``nscd``, ``slapd``)
leaves it holding whatever stdout it inherited, and reading a pipe to its end would then wait
for the daemon to exit. Each hook runs in a process group of its own, so that the Ctrl-C that
interrupts an experiment does not also kill the cleanup that must follow it.

Every hook has a time limit (``hook_timeout``, generous by default): at it, the hook's whole
process group is stopped (SIGTERM, then SIGKILL) and the hook counts as failed. An interruption
(Ctrl-C, SIGTERM, SIGHUP) stops a setup hook's group at once, since the cleanup that follows
undoes whatever it started; any other hook may be restoring state, so cutaway says what it is
waiting for and stops the hook only at a second interruption."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

from cutaway.model import Variant
from cutaway.runner.executor import SHELL, run_environment

HOOK_NAMES = ("setup", "prepare", "conclude", "cleanup")
OUTPUT_TAIL_BYTES = 2000
GRACE_SECONDS = 2.0  # between SIGTERM and SIGKILL when a hook's group is stopped
TIMED_OUT = -1  # HookResult.exit_code of a hook stopped at its time limit


@dataclass(frozen=True)
class HookResult:
    hook: str
    command: str
    exit_code: int  # TIMED_OUT when stopped at the time limit
    output: str  # the tail of stdout and stderr together
    timeout_seconds: float | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def timed_out(self) -> bool:
        return self.exit_code == TIMED_OUT

    def outcome(self) -> str:
        """How it ended, for messages: "exited with status 3", "timed out after 600 s"."""
        if self.timed_out:
            return f"timed out after {self.timeout_seconds:g} s (its process group was stopped)"
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
    notify: Callable[[str], None] = lambda message: None,
) -> HookResult | None:
    """Run one hook of a variant and wait for it, at most ``timeout_seconds``; None when the
    variant has no such hook. An interruption (KeyboardInterrupt, or whatever a signal handler
    raises) propagates after the hook is stopped (setup) or has ended (the others)."""
    command = hook_command(variant, hook)
    if command is None:
        return None
    with tempfile.TemporaryFile() as output:
        # An interrupt that lands while Popen is still starting the hook (the hook may already
        # run) would leave it behind: hold interrupts until the hook can be waited for or
        # stopped, then deliver them.
        held = _HeldInterrupts()
        try:
            process = subprocess.Popen(
                [SHELL, "-c", command],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=run_environment(variant),
                cwd=variant.cwd,
                process_group=0,
            )
        finally:
            pending = held.release()
        try:
            for signum in pending:
                signal.raise_signal(signum)  # to the handler that was there: now it may raise
            exit_code = process.wait(timeout_seconds)
        except subprocess.TimeoutExpired:
            stop_group(process)
            exit_code = TIMED_OUT
        except BaseException:
            _interrupted(process, variant, hook, command, notify)
            raise
        output.seek(0, 2)
        output.seek(max(0, output.tell() - OUTPUT_TAIL_BYTES))
        text = output.read().decode(errors="replace").strip()
    return HookResult(hook, command, exit_code, text, timeout_seconds)


_INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _HeldInterrupts:
    """Interrupt signals recorded instead of handled, until :meth:`release`."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.previous: dict[int, signal.Handlers | int | Callable[..., object] | None] = {}
        for signum in _INTERRUPTS:
            try:
                self.previous[signum] = signal.signal(signum, self._record)
            except ValueError:  # not the main thread: signals go to the main thread anyway
                break

    def _record(self, signum: int, frame: object) -> None:
        self.received.append(signum)

    def release(self) -> list[int]:
        """Put the previous handlers back; the signals received meanwhile, in order."""
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        return self.received


def _interrupted(
    process: subprocess.Popen[bytes],
    variant: Variant,
    hook: str,
    command: str,
    notify: Callable[[str], None],
) -> None:
    if hook == "setup":
        stop_group(process)
        return
    notify(
        f"waiting for the {hook} hook of {variant.name!r} to finish: `{command}` "
        "(interrupt again to stop it)"
    )
    try:
        reap(process)
    except BaseException:
        stop_group(process)


def reap(process: subprocess.Popen[bytes], timeout_seconds: float | None = None) -> int:
    """Wait for a hook's shell after an interrupt, without Popen.wait: an interrupt that lands
    inside Popen.wait can leave its internal lock held (https://bugs.python.org/issue29988,
    a signal between a lock's acquire and the ``with`` that releases it), and any later
    Popen.wait then blocks for ever. Raises subprocess.TimeoutExpired after
    ``timeout_seconds``."""
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
            time.sleep(0.01)
    return process.returncode


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """Stop a hook's whole process group: SIGTERM, then SIGKILL after GRACE_SECONDS; reap it."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            reap(process, GRACE_SECONDS)
            # The shell is gone; what it left in its group goes too.
            os.killpg(process.pid, signal.SIGKILL)
            break
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            break
    reap(process)
