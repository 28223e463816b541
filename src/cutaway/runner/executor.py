"""Executors turn a Variant into one measured run.

``ProcessExecutor`` is the real one: it resolves the command once per variant, hands it to the
native fork server (which spawns and times it, see forkserver.py), sends its stdout where the
variant says (Variant.stdout; captured when an output metric needs it), feeds it
Variant.stdin, keeps the tail of stderr for the report of a failed run, and converts the wait4
record into metrics. What a run leaves running is counted by the fork server, and stopped by
it unless the executor was made with ``keep_leftovers``.
The ``Executor`` protocol is the seam that lets unit tests drive the runner with a fake."""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from cutaway import interrupts
from cutaway.model import RunStatus, Variant
from cutaway.probes.base import Attachment, Measurement
from cutaway.runner.forkserver import BlockCommand, BlockOutcome, ForkServer, RawResult
from cutaway.variant_environment import run_environment

SHELL = "/bin/sh"
STDERR_TAIL_BYTES = 2000
# What a captured stream gives an output metric: its last 16 MiB (load tools print their summary
# at the end; a command that writes gigabytes must not fill cutaway's memory).
CAPTURE_LIMIT_BYTES = 16 * 2**20


class RunInterrupted(KeyboardInterrupt):
    """measure() was interrupted during a run that asked for a graceful stop
    (Attachment.interrupt_grace_seconds), or just after any run ended. The run has ended;
    ``measurement`` (status INTERRUPTED, its captured output included; or the run's own
    status when ``ended_on_its_own``) is what it measured until then, and
    ``interruption`` what interrupted it, for the caller to raise again once it has kept the
    measurement."""

    def __init__(
        self,
        measurement: Measurement,
        interruption: BaseException,
        *,
        ended_on_its_own: bool = False,
    ) -> None:
        super().__init__("interrupted")
        self.measurement = measurement
        self.interruption = interruption
        # The run had ended before the interrupt came (it landed while the result was read):
        # a measurement like any other, to be stored and counted before stopping.
        self.ended_on_its_own = ended_on_its_own


class BlockInterrupted(KeyboardInterrupt):
    """measure_block() was interrupted. ``measurements`` are the block's runs that had ended
    before the interrupt (a run it stopped is not among them: it is run again, as a single run
    stopped by an interrupt is), to be kept and counted before ``interruption`` is raised."""

    def __init__(self, measurements: list[Measurement], interruption: BaseException) -> None:
        super().__init__("interrupted")
        self.measurements = measurements
        self.interruption = interruption


class Executor(Protocol):
    def measure(
        self,
        variant: Variant,
        timeout_seconds: float | None,
        attachment: Attachment | None = None,
    ) -> Measurement:
        """Run the variant's command once, with what probes attach (variables added to its
        environment, a tracer in front of its command), and measure it. Raises
        KeyboardInterrupt (or whatever a signal handler raised) after stopping the command
        when interrupted; RunInterrupted, carrying the measurement, when the attachment asked
        for a graceful stop and the command ended."""

    def check(self, variant: Variant) -> str | None:
        """Why the variant's command cannot start here (no such program, not executable), or
        None when it can: asked once per variant before the first round."""

    def close(self) -> None: ...


@runtime_checkable
class BlockExecutor(Protocol):
    """An executor that can also run a block of plain runs in one go (ProcessExecutor)."""

    def can_block(self, variant: Variant) -> bool:
        """Whether the variant's runs may go in a block: nothing to feed them, nothing of
        their output to keep or copy."""

    def measure_block(
        self,
        variants: Sequence[Variant],
        order: Sequence[int],
        timeout_seconds: float | None,
        seconds: float,
    ) -> list[Measurement]:
        """Run ``variants[i]`` for each ``i`` of ``order``, one after another, with nothing
        in between, and measure each run as measure() does. Stops early, after at least one
        run: once ``seconds`` have passed since the first one started, after a run that did
        not end as a plain success (a failure, a crash, a timeout, processes left behind: its
        measurement is the last), or when a run cannot start (an ERROR measurement, the
        last). Returns one measurement for each run made, in order. Raises BlockInterrupted
        when interrupted."""


def command_argv(variant: Variant) -> list[str]:
    """The argument vector a variant runs: its own argv, or ``sh -c`` when it asks for a shell."""
    if variant.shell:
        text = variant.command if isinstance(variant.command, str) else shlex.join(variant.command)
        return [SHELL, "-c", text]
    if isinstance(variant.command, str):
        return shlex.split(variant.command)
    return list(variant.command)


def _found(program: str, env: Mapping[str, str]) -> str:
    if os.sep in program:
        return program
    return shutil.which(program, path=env.get("PATH")) or program


def program_problem(
    variant: Variant, resolve: Callable[[str, Mapping[str, str]], str] = _found
) -> str | None:
    """Why the variant's program cannot start here (no such program, not executable), or
    None when it can. ``resolve`` finds a bare name in the PATH (as the executor does)."""
    program = command_argv(variant)[0]
    path = resolve(program, run_environment(variant))
    if os.sep not in path:
        return f"no program {program!r} in PATH"
    full = path if os.path.isabs(path) or variant.cwd is None else os.path.join(variant.cwd, path)
    if not os.path.exists(full):
        return f"no such file: {path}"
    if os.path.isdir(full) or not os.access(full, os.X_OK):
        return f"not an executable program: {path}"
    return None


def metrics_from(raw: RawResult) -> dict[str, float]:
    """wait4 counters to metric values in base units (seconds, bytes, counts)."""
    return {
        "wall": raw.wall_ns / 1e9,
        "user": raw.user_ns / 1e9,
        "sys": raw.sys_ns / 1e9,
        "cpu": (raw.user_ns + raw.sys_ns) / 1e9,
        "max_rss": float(raw.max_rss_bytes),
        "minor_faults": float(raw.minor_faults),
        "major_faults": float(raw.major_faults),
        "voluntary_switches": float(raw.voluntary_switches),
        "involuntary_switches": float(raw.involuntary_switches),
        "block_in": float(raw.block_in),
        "block_out": float(raw.block_out),
    }


class ProcessExecutor:
    """Runs real processes through the fork server."""

    def __init__(self, server: ForkServer | None = None, *, keep_leftovers: bool = False) -> None:
        self._server = server or ForkServer()
        self._keep_leftovers = keep_leftovers
        self._paths: dict[tuple[str, str | None], str] = {}  # (name, PATH) -> path
        self._devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        self._stderr = os.memfd_create("cutaway-stderr", os.MFD_CLOEXEC)
        self._stdout: int | None = None  # a memfd, created for the first captured stdout
        # run_environment() by the variant's own additions: copying os.environ for every run
        # cost more than the rest of the run's bookkeeping. Never changed once made.
        self._environments: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        # command_argv() by (command, shell): a command given as text is split by shlex, which
        # cost about 8 us a run. Never changed once made.
        self._argvs: dict[tuple[tuple[str, ...] | str, bool], tuple[str, ...]] = {}
        # _command() by variant (its id, with the variant itself): (path, argv, env) of a run
        # that the attachment adds nothing to. Never changed once made.
        self._commands: dict[int, tuple[Variant, tuple[str, Sequence[str], dict[str, str]]]] = {}

    def _environment(self, variant: Variant, additions: Mapping[str, str]) -> dict[str, str]:
        """run_environment(variant) with ``additions``: the same dict for the same variant
        environment when there are none (the fork server then reuses its encoding)."""
        key = tuple(variant.env.items())
        base = self._environments.get(key)
        if base is None:
            base = self._environments[key] = run_environment(variant)
        return {**base, **additions} if additions else base

    def _resolve(self, program: str, env: Mapping[str, str]) -> str:
        """A bare name is looked up once in the variant's PATH; a path with a slash is passed
        on as it is (a relative one is resolved in the variant's cwd, as subprocess does)."""
        if os.sep in program:
            return program
        key = (program, env.get("PATH"))
        if key not in self._paths:
            self._paths[key] = shutil.which(program, path=env.get("PATH")) or program
        return self._paths[key]

    def check(self, variant: Variant) -> str | None:
        return program_problem(variant, self._resolve)

    def _stderr_tail(self) -> str:
        size = os.lseek(self._stderr, 0, os.SEEK_END)
        os.lseek(self._stderr, max(0, size - STDERR_TAIL_BYTES), os.SEEK_SET)
        data = os.read(self._stderr, STDERR_TAIL_BYTES)
        return data.decode(errors="replace").strip()

    def _command(
        self, variant: Variant, attachment: Attachment
    ) -> tuple[str, Sequence[str], dict[str, str]]:
        """The program's path, the argv and the environment of the variant's next run. Without
        additions from the attachment they are those of its previous run (kept by variant,
        which is immutable: one look-up a run instead of four)."""
        if not attachment.argv_prefix and not attachment.env:
            kept = self._commands.get(id(variant))
            if kept is not None and kept[0] is variant:
                return kept[1]
        key = (variant.command, variant.shell)
        command = self._argvs.get(key)
        if command is None:
            command = self._argvs[key] = tuple(command_argv(variant))
        argv = (*attachment.argv_prefix, *command)
        env = self._environment(variant, attachment.env)
        resolved = self._resolve(argv[0], env), argv, env
        if not attachment.argv_prefix and not attachment.env:
            self._commands[id(variant)] = (variant, resolved)  # the variant kept: its id stays
        return resolved

    def measure(
        self,
        variant: Variant,
        timeout_seconds: float | None,
        attachment: Attachment | None = None,
    ) -> Measurement:
        attachment = attachment or _NO_ATTACHMENT
        path, argv, env = self._command(variant, attachment)
        _rewind(self._stderr)
        interrupts.check()  # before starting anything
        self._server.last_result = None
        opened: list[int] = []  # files opened for this run (--input, --output): closed after it
        try:
            try:
                stdin_fd, stdout_fd = self._streams(variant, attachment, opened)
            except OSError as error:
                message = f"cannot open {error.filename}: {error.strerror or error}"
                return Measurement(RunStatus.ERROR, None, None, {}, message)
            try:
                raw = self._run(
                    path,
                    argv,
                    env,
                    variant.cwd,
                    timeout_seconds,
                    stdout_fd,
                    stdin_fd,
                    attachment.interrupt_grace_seconds,
                )
            except OSError as error:
                message = f"cannot run {argv[0]}: {error}"
                return Measurement(RunStatus.ERROR, None, None, {}, message)
            except KeyboardInterrupt as interruption:
                stopped = self._server.last_result
                if stopped is not None and not stopped.interrupted:
                    # It landed after the run ended, while its result was read: keep the run.
                    raise RunInterrupted(
                        self._measured(stopped, timeout_seconds, variant, attachment),
                        interruption,
                        ended_on_its_own=True,
                    ) from None
                if attachment.interrupt_grace_seconds is None or stopped is None:
                    raise
                measured = self._interrupted(stopped, self._output(variant, attachment)[0])
                raise RunInterrupted(measured, interruption) from None
        finally:
            for fd in opened:
                with contextlib.suppress(OSError):
                    os.close(fd)
        return self._measured(raw, timeout_seconds, variant, attachment)

    def can_block(self, variant: Variant) -> bool:
        return variant.stdin is None and variant.stdout in ("null", "inherit")

    def measure_block(
        self,
        variants: Sequence[Variant],
        order: Sequence[int],
        timeout_seconds: float | None,
        seconds: float,
    ) -> list[Measurement]:
        commands = []
        for variant in variants:
            path, argv, env = self._command(variant, _NO_ATTACHMENT)
            # A relative cwd is made absolute by run_block, as by run().
            commands.append(BlockCommand(path, tuple(argv), env, variant.cwd))
        stdouts = {variants[index].stdout for index in order}
        if len(stdouts) != 1:
            raise ValueError("a block's runs share one stdout: every variant's must be the same")
        stdout_fd = self._devnull if stdouts == {"null"} else _STDOUT_FD
        if stdout_fd == _STDOUT_FD:
            sys.stdout.flush()
        _rewind(self._stderr)
        interrupts.check()  # before starting anything
        self._server.last_block = None
        try:
            outcome = self._run_block(commands, order, timeout_seconds, stdout_fd, seconds)
        except KeyboardInterrupt as interruption:
            partial = self._server.last_block
            if partial is None:
                raise
            ended = [raw for raw in partial.results if not raw.interrupted]
            measured = [self._block_measured(raw, timeout_seconds) for raw in ended]
            raise BlockInterrupted(measured, interruption) from None
        measured = [self._block_measured(raw, timeout_seconds) for raw in outcome.results]
        if outcome.spawn_error is not None:
            program = variants[order[len(outcome.results)]]
            argv0 = self._command(program, _NO_ATTACHMENT)[1][0]
            message = f"cannot run {argv0}: {outcome.spawn_error}"
            measured.append(Measurement(RunStatus.ERROR, None, None, {}, message))
        return measured

    @interrupts.raising
    def _run_block(
        self,
        commands: Sequence[BlockCommand],
        order: Sequence[int],
        timeout_seconds: float | None,
        stdout_fd: int,
        seconds: float,
    ) -> BlockOutcome:
        """The wait for a block: as _run, the only part of it an interrupt may stop."""
        interrupts.check()
        return self._server.run_block(
            commands,
            order,
            timeout_seconds,
            stdout_fd,
            self._stderr,
            seconds=seconds,
            keep_leftovers=self._keep_leftovers,
        )

    def _block_measured(self, raw: RawResult, timeout_seconds: float | None) -> Measurement:
        """A block's run as measure() would have measured it: a plain success without a look
        at stderr (only a block's last run may be anything else; stderr then holds its own)."""
        if raw.exit_code == 0 and not raw.timed_out:
            return Measurement(
                RunStatus.OK, 0, None, metrics_from(raw), "",
                leftover_processes=raw.leftover_processes, leftover_names=raw.leftover_names,
            )  # fmt: skip
        status, exit_code, signal, message = self._judged(raw, timeout_seconds)
        return Measurement(
            status, exit_code, signal, metrics_from(raw), message,
            leftover_processes=raw.leftover_processes, leftover_names=raw.leftover_names,
        )  # fmt: skip

    @interrupts.raising
    def _run(
        self,
        path: str,
        argv: Sequence[str],
        env: dict[str, str],
        cwd: str | None,
        timeout_seconds: float | None,
        stdout_fd: int,
        stdin_fd: int | None,
        interrupt_grace_seconds: float | None,
    ) -> RawResult:
        """The only part of a run an interrupt may stop where it lands: the wait for it. Once
        it has ended, its result (ForkServer.last_result) is kept whatever lands."""
        interrupts.check()
        return self._server.run(
            path,
            argv,
            env,
            cwd,
            timeout_seconds,
            stdout_fd,
            self._stderr,
            stdin_fd,
            keep_leftovers=self._keep_leftovers,
            interrupt_grace_seconds=interrupt_grace_seconds,
        )

    def _measured(
        self,
        raw: RawResult,
        timeout_seconds: float | None,
        variant: Variant,
        attachment: Attachment,
    ) -> Measurement:
        output, problem = self._output(variant, attachment)
        status, exit_code, signal, message = self._judged(raw, timeout_seconds)
        if problem is not None and status == RunStatus.OK:
            # As the command itself fails when it cannot write its output (echo > /dev/full).
            status, message = RunStatus.ERROR, problem
        return Measurement(
            status, exit_code, signal, metrics_from(raw), message, output,
            leftover_processes=raw.leftover_processes, leftover_names=raw.leftover_names,
        )  # fmt: skip

    def _judged(
        self, raw: RawResult, timeout_seconds: float | None
    ) -> tuple[RunStatus, int | None, int | None, str]:
        """What the wait4 record says of the run: its status, exit code, signal, message."""
        if raw.timed_out:
            message = f"killed after the {timeout_seconds:g} s timeout"
            return RunStatus.TIMEOUT, None, raw.signal, message
        if raw.exit_code == 0:
            return RunStatus.OK, 0, None, ""
        how = f"exit status {raw.exit_code}" if raw.signal is None else f"signal {raw.signal}"
        tail = self._stderr_tail()
        message = f"{how}: {tail}" if tail else how
        return RunStatus.FAILED, raw.exit_code, raw.signal, message

    def _interrupted(self, raw: RawResult, output: dict[str, str]) -> Measurement:
        """A run stopped because cutaway was interrupted: how it ended, what it measured."""
        how = f"exit status {raw.exit_code}" if raw.signal is None else f"signal {raw.signal}"
        tail = self._stderr_tail()
        message = f"interrupted ({how}): {tail}" if tail else f"interrupted ({how})"
        return Measurement(
            RunStatus.INTERRUPTED, raw.exit_code, raw.signal, metrics_from(raw), message, output,
            leftover_processes=raw.leftover_processes, leftover_names=raw.leftover_names,
        )  # fmt: skip

    def _captures_stdout(self, variant: Variant, attachment: Attachment) -> bool:
        return variant.stdout == "pipe" or "stdout" in attachment.capture

    def _streams(
        self, variant: Variant, attachment: Attachment, opened: list[int]
    ) -> tuple[int | None, int]:
        """The run's stdin (None: the server's /dev/null) and stdout descriptors; files opened
        for this run are added to ``opened``, for the caller to close. Captured stdout goes to
        a memfd, copied to the terminal or the file of Variant.stdout after the run."""
        stdin_fd = None
        if variant.stdin is not None:
            stdin_fd = _open_stream(variant.stdin, os.O_RDONLY | os.O_CLOEXEC)
            opened.append(stdin_fd)
        if self._captures_stdout(variant, attachment):
            if self._stdout is None:
                self._stdout = os.memfd_create("cutaway-stdout", os.MFD_CLOEXEC)
            _rewind(self._stdout)
            return stdin_fd, self._stdout
        if variant.stdout == "null":
            return stdin_fd, self._devnull
        if variant.stdout == "inherit":
            sys.stdout.flush()
            return stdin_fd, _STDOUT_FD
        stdout_fd = _open_stream(variant.stdout, _FILE_FLAGS)
        opened.append(stdout_fd)
        return stdin_fd, stdout_fd

    def _output(
        self, variant: Variant, attachment: Attachment
    ) -> tuple[dict[str, str], str | None]:
        """The captured streams the attachment asked for, and why captured stdout could not go
        where the variant sends it (the terminal, a file), if it could not."""
        output: dict[str, str] = {}
        problem = None
        if self._stdout is not None and self._captures_stdout(variant, attachment):
            if variant.stdout not in ("null", "pipe"):
                problem = _copy_out(self._stdout, variant.stdout)
            if "stdout" in attachment.capture:
                output["stdout"] = _tail(self._stdout, CAPTURE_LIMIT_BYTES)
        if "stderr" in attachment.capture:
            output["stderr"] = _tail(self._stderr, CAPTURE_LIMIT_BYTES)
        return output, problem

    def close(self) -> None:
        self._server.close()
        for fd in (self._devnull, self._stderr, self._stdout):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)


_STDOUT_FD = 1  # cutaway's own standard output, whatever sys.stdout is now
_NO_ATTACHMENT = Attachment()  # what a run without probes gets (immutable: shared by all)
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC


def _rewind(fd: int) -> None:
    """Empty a memfd for the next run: one lseek when it is empty already (the last run wrote
    nothing to it, as most do), the truncation only when it holds something."""
    if os.lseek(fd, 0, os.SEEK_END):
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)


def _tail(fd: int, limit: int) -> str:
    """The last ``limit`` bytes written to a memfd, as text."""
    size = os.lseek(fd, 0, os.SEEK_END)
    start = max(0, size - limit)
    chunks = []
    while start < size:
        chunk = os.pread(fd, min(2**20, size - start), start)
        if not chunk:
            break
        chunks.append(chunk)
        start += len(chunk)
    return b"".join(chunks).decode(errors="replace")


def _copy_out(fd: int, destination: str) -> str | None:
    """Copy a memfd's whole content to cutaway's stdout ("inherit") or to a file; why it
    could not be, in words, or None. A FIFO without a reader is waited for, as a shell's ``>``
    waits, until an interrupt arrives (the run is then kept, its output not written)."""
    if destination == "inherit":
        sys.stdout.flush()
        target, close = _STDOUT_FD, False
    else:
        try:
            opened = _open_for_writing(destination)
        except OSError as error:
            return f"cannot write its output to {destination!r}: {error.strerror or error}"
        if opened is None:
            return None
        target, close = opened, True
    try:
        _send_all(fd, target)
    except OSError as error:
        where = "standard output" if destination == "inherit" else repr(destination)
        return f"cannot write its output to {where}: {error.strerror or error}"
    finally:
        if close:
            os.close(target)
    return None


def _send_all(fd: int, target: int) -> None:
    """sendfile, or read and write where the target cannot take it (/dev/full: EINVAL)."""
    size, offset = os.lseek(fd, 0, os.SEEK_END), 0
    while offset < size:
        try:
            sent = os.sendfile(target, fd, offset, size - offset)
        except OSError as error:
            if error.errno not in (errno.EINVAL, errno.ENOSYS) or offset:
                raise
            sent = _write_all(target, os.pread(fd, min(2**20, size - offset), offset))
        if sent == 0:
            break
        offset += sent


def _write_all(target: int, data: bytes) -> int:
    view = memoryview(data)
    while view:
        view = view[os.write(target, view) :]
    return len(data)


@interrupts.raising
def _open_stream(path: str, flags: int) -> int:
    """A run's --input or --output file, opened before it starts. A FIFO's open waits for its
    other end: an interrupt must stop that wait (it stops the experiment before this run)."""
    interrupts.check()  # one held since measure() looked: the open may wait for ever
    return os.open(path, flags, 0o666)


_WAIT_FOR_READER_SECONDS = 0.05


def _open_for_writing(path: str) -> int | None:
    """``path`` opened for writing, a FIFO once it has a reader; None when an interrupt came
    while waiting for one (held: the run that ended is kept, the runner raises it later)."""
    interrupts_before = interrupts.count()
    while True:
        try:
            handle = os.open(path, _FILE_FLAGS | os.O_NONBLOCK, 0o666)
        except OSError as error:
            if error.errno != errno.ENXIO:  # ENXIO: a FIFO that no one reads yet
                raise
            if interrupts.count() > interrupts_before or interrupts.pending():
                return None
            time.sleep(_WAIT_FOR_READER_SECONDS)
            continue
        os.set_blocking(handle, True)
        return handle
