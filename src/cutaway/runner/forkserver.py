"""Client of cutaway's native fork server, which spawns, times and reaps every measured run.

Why a server: wait4(2) reports a child's peak RSS (``ru_maxrss``), but exec records the
high-water RSS of the address space it replaces, and a child made by fork, vfork or
posix_spawn starts out in (a copy of) its parent's. Spawned from the Python process, even
``/bin/true`` "peaks" at the interpreter's size: 16.8 MB from a bare python3.11 through
subprocess + os.wait4, 30.5 MB once numpy is imported. So every run is spawned by
``cw_forkserver`` (native/cw_forkserver.c), a small C process (statically linked, peak RSS
~0.7 MB) started once per ForkServer: through it ``/bin/true`` reports 1.05 MB, its own
size. The server reads CLOCK_MONOTONIC right before posix_spawn and right after wait4, so no
interpreter work lands inside the measured interval either: the median wall of ``/bin/true``
over 200 runs was 0.40-0.66 ms through the server against 0.58-0.71 ms for
``hyperfine -N --runs 200 true`` (six alternating trials; Linux 6.18, glibc 2.36, 2 busy CPUs).

What a run leaves running after its own process is reaped (``sleep 100 &``, a daemon it
started, in its process group or escaped from it with setsid) is found by the server, a child
subreaper, after the run's wall clock has stopped: RawResult.leftover_processes counts it, and
the server stops it (SIGTERM, SIGKILL 2 s later) unless ``run(keep_leftovers=True)``. When
the run left nothing, finding that out costs the server one waitpid(2) call.

``run_block`` makes many plain runs (stdin /dev/null, one stdout and one stderr for all) in
one exchange: the client sends the commands and the order of the runs, and the server makes
them one after another, each exactly as ``run`` makes one (the same timing points, timeout
and leftover handling), without a message in between; when the block ends (the order is
done, a time limit has passed, a run was unusual or could not be started, or the client
sent STOP) it sends every run's RESULT and a BLOCK_END at once. The client sleeps through
the block instead of waking twice a run and doing its bookkeeping between runs, which is
most of what a run of a tiny command costs beyond the command itself. Inside the measured
interval a block's run does a little less than ``run``'s: the server sends no SPAWNED.

The wire format is documented in native/cw_protocol.h; this module mirrors its structs with
``struct`` formats. One run (or block) at a time: a ForkServer is neither thread-safe nor
fork-safe (it may be created in any thread: the server tells its parent thread's exit from its
parent process's). The child runs in a process group of its own, so a Ctrl-C on the terminal
reaches only cutaway, which decides: run() kills the group and re-raises (or, for a command
that can stop on its own, such as the load generator, first sends it SIGINT and gives it a
grace period to write what it measured).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import math
import os
import select
import signal
import socket
import struct
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from cutaway.value_class import value_class

EXECUTABLE_NAME = "cw_forkserver"
PROTOCOL_VERSION = 4
_MAGIC = 0x53465743
_HEADER = struct.Struct("=IHHII")  # magic, version, type, length, sequence
_HELLO = struct.Struct("=iI")  # server pid, max payload bytes
_RUN = struct.Struct("=qIIII")  # timeout ns, flags, argc, envc, reserved
_SPAWNED = struct.Struct("=iI")  # pid, reserved
_SPAWN_ERROR = struct.Struct("=iI")  # errno, stage
_RESULT = struct.Struct("=12qQq")  # see RawResult: 12 figures, flags, leftover_processes
_BLOCK = struct.Struct("=qII")  # time limit ns, command count, order count
_BLOCK_COMMAND_LENGTH = struct.Struct("=I")  # before each command's RUN-like payload
_BLOCK_END = struct.Struct("=IIiI")  # runs ended, reason, errno, stage
_HELLO_TYPE, _RUN_TYPE, _SPAWNED_TYPE, _SPAWN_ERROR_TYPE, _RESULT_TYPE, _FATAL_TYPE = range(1, 7)
_BLOCK_TYPE, _BLOCK_END_TYPE, _STOP_TYPE = range(7, 10)
_RUN_HAS_CWD = 1
_RUN_HAS_STDIN = 2
_RUN_KEEP_LEFTOVERS = 4
_STAGE_CWD = 2
_RESULT_TIMED_OUT = 1
_RESULT_STOPPED = 2  # in a block: killed by the server because the client sent STOP
# BLOCK_END's reasons, as BlockOutcome.stopped says them.
_BLOCK_REASONS = {1: "done", 2: "time", 3: "unusual", 4: "spawn-error", 5: "interrupted"}
BLOCK_MAX_COMMANDS = 256  # CW_BLOCK_MAX_COMMANDS
BLOCK_MAX_RUNS = 65536  # CW_BLOCK_MAX_ORDER: order entries of one block
# SCM_RIGHTS data of a RUN: its 2 or 3 descriptors (stdin, when given, stdout, stderr).
_DESCRIPTORS = {count: struct.Struct(f"={count}i") for count in (2, 3)}
_MAX_TIMEOUT_NS = 2**62  # the server accepts up to 2**62 - 1 ns: 146 years
# One recv's buffer: a RESULT with its leftovers' names (the largest reply to a RUN) fits in
# it whole, and so does what a socket buffer holds of a block's replies (recv_into costs the
# same whatever the buffer's size: only the bytes received are copied).
_RECEIVE_BYTES = 256 * 1024
# How many distinct RUN payloads a ForkServer keeps encoded (an experiment has a few variants).
_ENCODED_RUNS_KEPT = 64
# How long to wait for the server to greet us, or to finish a run after we killed it.
_SERVER_REPLY_SECONDS = 10.0


# A dataclass, not @value_class: one is made for every run, and value_class's __init__ (through
# its Python __setattr__) costs ~2.5 us more an instance, more than the ~0.8 ms its creation saves
# over a long experiment.
@dataclasses.dataclass(frozen=True)
class RawResult:
    """The wait4 record of one run, as the fork server measured it. Times in ns."""

    pid: int
    wait_status: int
    wall_ns: int
    user_ns: int
    sys_ns: int
    max_rss_bytes: int
    minor_faults: int
    major_faults: int
    voluntary_switches: int
    involuntary_switches: int
    block_in: int
    block_out: int
    timed_out: bool  # the server killed the process group at the timeout
    # The client stopped the process group (SIGINT with a grace period, or SIGKILL) because
    # run() was interrupted; or, in a block, the server killed it because run_block() was.
    interrupted: bool
    # Processes the run left running after it ended (stopped by the server unless kept), and
    # their distinct names (at most 8). A timed-out run's group, killed by the server, is not
    # counted: only what escaped it.
    leftover_processes: int = 0
    leftover_names: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int | None:
        return os.WEXITSTATUS(self.wait_status) if os.WIFEXITED(self.wait_status) else None

    @property
    def signal(self) -> int | None:
        return os.WTERMSIG(self.wait_status) if os.WIFSIGNALED(self.wait_status) else None


@value_class
class BlockCommand:
    """One command of a block: what ``run`` takes for one run, but for stdio and timeout."""

    path: str  # no PATH search, as run()
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None


@value_class
class BlockOutcome:
    """How a block went: the records of the runs that ended, and why it stopped there."""

    # The runs that ended, in order; a run the interruption stopped comes last, with
    # interrupted=True.
    results: tuple[RawResult, ...]
    # "done": the order was done; "time": the time limit had passed after the last run;
    # "unusual": the last run exited non-zero, was killed by a signal, timed out or left
    # processes; "spawn-error": the next run could not start (see spawn_error);
    # "interrupted": run_block() was interrupted and stopped the block.
    stopped: str
    # stopped == "spawn-error": the OSError run() would raise for the run after the last
    # result (its path, or its cwd, named).
    spawn_error: OSError | None = None


class ForkServerError(RuntimeError):
    """The fork server is missing, died or misbehaved. Deliberately not an OSError: callers
    treat OSError from run() as "this command cannot be started", which this is not."""


def executable_path() -> str:
    """Where the fork server installed with this package is."""
    path = Path(__file__).resolve().parent.parent / EXECUTABLE_NAME
    if not os.access(path, os.X_OK):
        raise ForkServerError(
            f"cutaway's fork server is missing (or not executable) at {path}: reinstall cutaway "
            "with `pip install .` (or `pip install -e .` in a checkout), which compiles it"
        )
    return str(path)


@dataclasses.dataclass
class _BlockExchange:
    """Where one run_block() stands, so that an interruption at any point can be cleaned up."""

    sequence: int
    sent: bool = False
    results: list[RawResult] = dataclasses.field(default_factory=list)
    end: tuple[int, int, int, int] | None = None  # BLOCK_END: runs, reason, errno, stage


@dataclasses.dataclass
class _Exchange:
    """Where one run() stands, so that an interruption at any point can be cleaned up."""

    sequence: int
    sent: bool = False
    pid: int | None = None
    finished: bool = False


class ForkServer:
    """A running cw_forkserver. ``run`` spawns one command through it and returns its record.

    If the conversation ever gets into an unknown state (an interruption in the middle of
    sending, a server that died), the server is discarded: closing its socket makes it kill
    whatever it runs and exit. The next ``run`` starts a fresh one."""

    def __init__(self, executable: str | None = None) -> None:
        self._executable = executable or executable_path()
        self._socket: socket.socket | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._server_cwd: str | None = None
        self._max_payload_bytes = 0
        self._sequence = 0
        self._closed = False
        self.last_result: RawResult | None = None  # also set when run() was interrupted
        self.last_block: BlockOutcome | None = None  # also set when run_block() was
        # The last environment sent, and its encoding: most runs send the same one again.
        self._environment: dict[str, str] | None = None
        self._encoded_environment = b""
        # RUN payloads (all but the header) by what they encode, for that environment.
        self._encoded_runs: dict[tuple[object, ...], bytes] = {}
        # What recv got beyond the message read (the start of the next one), and its buffer.
        self._received = bytearray()
        self._receive_view = memoryview(bytearray(_RECEIVE_BYTES))
        self._start()

    @property
    def server_pid(self) -> int | None:
        """The pid of the server process now running, if any."""
        return self._process.pid if self._process is not None else None

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the server (it exits when its socket closes). Idempotent."""
        self._closed = True
        self._discard()

    def run(
        self,
        path: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
        timeout_seconds: float | None,
        stdout_fd: int,
        stderr_fd: int,
        stdin_fd: int | None = None,
        keep_leftovers: bool = False,
        interrupt_grace_seconds: float | None = None,
    ) -> RawResult:
        """Spawn ``path`` (no PATH search; relative to ``cwd`` when relative, as subprocess
        does) with exactly ``argv`` and ``env``, wait for it, and return its record. Its stdin
        is ``stdin_fd``, or /dev/null when None. What it leaves running is stopped before this
        returns (see RawResult.leftover_processes), unless ``keep_leftovers``.

        Raises OSError (FileNotFoundError, PermissionError, ...) naming the path, or the cwd,
        when it cannot be started. If a BaseException (KeyboardInterrupt, or what a signal
        handler raised) arrives while it runs, kills its process group, waits for the server
        to reap it (see ``last_result``) and re-raises. With ``interrupt_grace_seconds``, the
        group first gets SIGINT and that long to end on its own before it is killed."""
        if self._closed:
            raise ForkServerError("run() on a closed ForkServer")
        if cwd is not None:
            cwd = os.path.abspath(cwd)
        elif os.getcwd() != self._server_cwd:
            cwd = os.getcwd()  # the server still sits where we were when it started
        self._sequence = (self._sequence + 1) % 2**32
        self.last_result = None
        exchange = _Exchange(self._sequence)
        has_stdin = stdin_fd is not None
        if env != self._environment:
            self._encoded_environment = encode_environment(env, path)
            self._environment = dict(env)
            self._encoded_runs.clear()
        # Most runs repeat an earlier request but for its sequence number: its payload is kept.
        key = (path, tuple(argv), cwd, timeout_seconds, has_stdin, keep_leftovers)
        payload = self._encoded_runs.get(key)
        if payload is None:
            payload = _encode_run_payload(
                path, argv, env, cwd, timeout_seconds, has_stdin, keep_leftovers,
                encoded_environment=self._encoded_environment,
            )  # fmt: skip
            if len(self._encoded_runs) >= _ENCODED_RUNS_KEPT:
                self._encoded_runs.clear()
            self._encoded_runs[key] = payload
        request = _header(_RUN_TYPE, len(payload), exchange.sequence) + payload
        if self._socket is None:
            self._start()
        if len(request) - _HEADER.size > self._max_payload_bytes:
            raise ValueError(f"argv and env of {path} are too large for the fork server")
        try:
            fds = [stdout_fd, stderr_fd] if stdin_fd is None else [stdin_fd, stdout_fd, stderr_fd]
            self._send(request, fds)
            exchange.sent = True
            return self._receive_result(exchange, path, cwd)
        except BaseException as error:
            if isinstance(error, OSError) and (exchange.finished or _refused_fds(error, exchange)):
                raise  # cannot be started, or a bad stdout_fd/stderr_fd: nothing runs
            self._recover(exchange, interrupt_grace_seconds)
            if isinstance(error, OSError):
                raise ForkServerError(f"lost the fork server: {error}") from error
            raise

    def run_block(
        self,
        commands: Sequence[BlockCommand],
        order: Sequence[int],
        timeout_seconds: float | None,
        stdout_fd: int,
        stderr_fd: int,
        *,
        seconds: float,
        keep_leftovers: bool = False,
    ) -> BlockOutcome:
        """Make the runs that ``order`` names (indices into ``commands``) one after another in
        one exchange with the server, each as ``run`` makes one, with stdin /dev/null,
        ``stdout_fd`` and ``stderr_fd`` (shared by every run), ``timeout_seconds`` and
        ``keep_leftovers``; return their records and why the block stopped.

        The block stops after the order's last run; after the first run that ends once
        ``seconds`` have passed since the block's first spawn (so at least one run is made;
        ``math.inf``: no limit); after an unusual run (exit status not 0, a signal, a timeout,
        leftover processes), whose record is the last; or when a run cannot be started (no
        record for it; ``spawn_error`` is the OSError ``run`` would raise). Before each run, a
        ``stderr_fd`` that is a non-empty regular file is emptied, so that afterwards it holds
        the last run's stderr only (so it must not be ``stdout_fd``'s file).

        Raises ValueError, before anything is sent, for a block the server would refuse (no
        command or run, more than BLOCK_MAX_COMMANDS or BLOCK_MAX_RUNS, an index out of range,
        ``seconds`` not positive, whatever ``run`` refuses). If a BaseException
        (KeyboardInterrupt, or what a signal handler raised) arrives meanwhile, asks the
        server to stop (it kills the running child's process group and ends the block), reads
        what it sends, sets ``last_block`` (see BlockOutcome) and re-raises."""
        if self._closed:
            raise ForkServerError("run_block() on a closed ForkServer")
        self.last_block = None
        payload, cwds = self._encode_block(
            commands, order, timeout_seconds, seconds, keep_leftovers
        )
        self._sequence = (self._sequence + 1) % 2**32
        exchange = _BlockExchange(self._sequence)
        if self._socket is None:
            self._start()
        if len(payload) > self._max_payload_bytes:
            raise ValueError(f"a block of {len(payload)} bytes is too large for the fork server")
        request = _header(_BLOCK_TYPE, len(payload), exchange.sequence) + payload
        try:
            self._send(request, [stdout_fd, stderr_fd])
            exchange.sent = True
            self._receive_block(exchange)
        except BaseException as error:
            if isinstance(error, OSError) and _refused_fds(error, exchange):
                raise  # a bad stdout_fd or stderr_fd: nothing was sent, nothing runs
            if isinstance(error, ForkServerError):
                self._discard()  # out of step, or gone: closing the socket stops the child
            else:
                self._stop_block(exchange)
            self.last_block = _block_outcome(exchange, commands, order, cwds)
            if isinstance(error, OSError):
                raise ForkServerError(f"lost the fork server: {error}") from error
            raise
        self.last_block = _block_outcome(exchange, commands, order, cwds)
        return self.last_block

    def _encode_block(
        self,
        commands: Sequence[BlockCommand],
        order: Sequence[int],
        timeout_seconds: float | None,
        seconds: float,
        keep_leftovers: bool,
    ) -> tuple[bytes, list[str | None]]:
        """The BLOCK message's payload, after its header, and each command's cwd as sent."""
        if not 0 < len(commands) <= BLOCK_MAX_COMMANDS:
            raise ValueError(
                f"a block takes 1 to {BLOCK_MAX_COMMANDS} commands, not {len(commands)}"
            )
        if not 0 < len(order) <= BLOCK_MAX_RUNS:
            raise ValueError(f"a block makes 1 to {BLOCK_MAX_RUNS} runs, not {len(order)}")
        if any(not 0 <= index < len(commands) for index in order):
            raise ValueError(f"a block's order holds an index outside 0..{len(commands) - 1}")
        if not seconds > 0:
            raise ValueError(f"seconds must be positive (math.inf: no limit), not {seconds}")
        limit_ns = 0 if math.isinf(seconds) else _nanoseconds(seconds)
        here = os.getcwd()
        environments: list[tuple[Mapping[str, str], bytes]] = []  # most commands share one
        parts = [_BLOCK.pack(limit_ns, len(commands), len(order))]
        cwds: list[str | None] = []
        for command in commands:
            cwd = command.cwd
            if cwd is not None:
                cwd = os.path.abspath(cwd)
            elif here != self._server_cwd:
                cwd = here  # the server still sits where we were when it started
            encoded_environment = next(
                (encoded for env, encoded in environments if env == command.env), None
            )
            if encoded_environment is None:
                encoded_environment = encode_environment(command.env, command.path)
                environments.append((command.env, encoded_environment))
            encoded = _encode_run_payload(
                command.path, command.argv, command.env, cwd, timeout_seconds, False,
                keep_leftovers, encoded_environment=encoded_environment,
            )  # fmt: skip
            parts += [_BLOCK_COMMAND_LENGTH.pack(len(encoded)), encoded]
            cwds.append(cwd)
        parts.append(struct.pack(f"={len(order)}H", *order))
        return b"".join(parts), cwds

    def _receive_block(self, exchange: _BlockExchange) -> None:
        """Read the block's replies (its RESULTs, then BLOCK_END), all sent when it ended."""
        while exchange.end is None:
            kind, sequence, payload = self._read_message()
            if sequence != exchange.sequence:
                raise ForkServerError(f"reply to request {sequence}, not {exchange.sequence}")
            if kind == _RESULT_TYPE:
                exchange.results.append(_decode_result(payload))
            elif kind == _BLOCK_END_TYPE and len(payload) == _BLOCK_END.size:
                end = _BLOCK_END.unpack(payload)
                if end[0] != len(exchange.results) or end[1] not in _BLOCK_REASONS:
                    raise ForkServerError(
                        f"BLOCK_END for {end[0]} runs (reason {end[1]})"
                        f" after {len(exchange.results)} results"
                    )
                exchange.end = end
            else:
                raise ForkServerError(f"unexpected message type {kind} from the fork server")

    def _stop_block(self, exchange: _BlockExchange) -> None:
        """After an interruption: ask the server to stop the block (it kills the running child
        and ends the block; a STOP that crosses the block's end is ignored by the server) and
        read the replies to their end, so that the server is ready for the next request; if
        that fails in any way, discard the server."""
        if exchange.end is not None:
            return  # the block had ended and its replies are read: nothing runs
        if not exchange.sent or self._socket is None:
            self._discard()  # maybe half a request went out: the stream is out of step
            return
        try:
            self._socket.settimeout(_SERVER_REPLY_SECONDS)
            self._socket.sendall(_header(_STOP_TYPE, 0, exchange.sequence))
            self._receive_block(exchange)
            self._socket.settimeout(None)
        except BaseException:
            self._discard()

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        command = [self._executable, str(theirs.fileno()), str(os.getpid())]
        try:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
            )  # fmt: skip
        except OSError as error:
            ours.close()
            raise ForkServerError(f"cannot start {self._executable}: {error}") from error
        finally:
            theirs.close()
        self._socket = ours
        try:
            self._server_cwd = os.getcwd()
            ours.settimeout(_SERVER_REPLY_SECONDS)
            kind, _, payload = self._read_message()
            ours.settimeout(None)
            if kind != _HELLO_TYPE or len(payload) != _HELLO.size:
                raise ForkServerError(f"{self._executable} did not greet as a fork server")
            self._max_payload_bytes = _HELLO.unpack(payload)[1]
        except BaseException:
            self._discard()
            raise

    def _discard(self) -> None:
        """Close the socket and wait for the server, which first kills and reaps any child."""
        connection, process = self._socket, self._process
        self._socket = self._process = None
        self._received.clear()  # the next server's stream starts afresh
        if connection is not None:
            connection.close()
        if process is not None:
            try:
                process.wait(timeout=_SERVER_REPLY_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def _send(self, request: bytes, fds: list[int]) -> None:
        """The request with the run's descriptors (socket.send_fds without its array: this is
        on the path between two runs)."""
        assert self._socket is not None
        rights = _DESCRIPTORS[len(fds)].pack(*fds)
        sent = self._socket.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights)])
        if sent < len(request):
            self._socket.sendall(memoryview(request)[sent:])

    def _receive_result(self, exchange: _Exchange, path: str, cwd: str | None) -> RawResult:
        while True:
            result = self._receive_one(exchange, path, cwd)
            if result is not None:
                return result

    def _receive_one(self, exchange: _Exchange, path: str, cwd: str | None) -> RawResult | None:
        """Read one reply to ``exchange``; the RawResult when it was the last one."""
        kind, sequence, payload = self._read_message()
        if sequence != exchange.sequence:
            raise ForkServerError(f"reply to request {sequence}, not {exchange.sequence}")
        if kind == _SPAWNED_TYPE and exchange.pid is None:
            exchange.pid = _SPAWNED.unpack(payload)[0]
            return None
        if kind == _SPAWN_ERROR_TYPE and exchange.pid is None:
            exchange.finished = True
            number, stage = _SPAWN_ERROR.unpack(payload)
            raise _spawn_error(number, stage, path, cwd)
        if kind == _RESULT_TYPE and exchange.pid is not None:
            exchange.finished = True
            self.last_result = _decode_result(payload)
            return self.last_result
        raise ForkServerError(f"unexpected message type {kind} from the fork server")

    def _recover(self, exchange: _Exchange, grace_seconds: float | None = None) -> None:
        """After an interruption: stop the child (SIGINT and up to ``grace_seconds`` to end on
        its own when given, else or then SIGKILL), read the replies to their end so that the
        server is ready for the next run; if that fails in any way, discard the server."""
        if exchange.finished:
            return
        if not exchange.sent or self._socket is None:
            self._discard()  # maybe half a request went out: the stream is out of step
            return
        try:
            self._socket.settimeout(_SERVER_REPLY_SECONDS)
            killed = signalled = False
            while not exchange.finished:
                if exchange.pid is not None and not killed:
                    if grace_seconds is not None and not signalled:
                        signalled = True
                        _signal_group(exchange.pid, signal.SIGINT)
                        killed = not self._replied_within(grace_seconds)
                    else:
                        killed = True
                    if killed:
                        _kill_group(exchange.pid)
                try:
                    result = self._receive_one(exchange, "", None)
                except OSError:
                    if exchange.finished:
                        break  # it could not be started: nothing to stop
                    raise
                if result is not None:
                    stopped = killed or signalled
                    self.last_result = dataclasses.replace(result, interrupted=stopped)
            self._socket.settimeout(None)
        except BaseException:
            self._discard()

    def _replied_within(self, seconds: float) -> bool:
        """Whether the server has a reply ready within ``seconds`` (waited for before reading,
        so that a timeout never cuts a message in half)."""
        assert self._socket is not None
        if self._received:  # a reply that came with an earlier one, read already
            return True
        readable, _, _ = select.select([self._socket], [], [], seconds)
        return bool(readable)

    def _receive_more(self) -> None:
        """Append what the server has sent, up to _RECEIVE_BYTES, to the bytes received: each
        reply comes in one send, so one recv takes it whole (and whatever came after it)."""
        assert self._socket is not None
        got = self._socket.recv_into(self._receive_view)
        if got == 0:
            raise ForkServerError(f"the fork server exited unexpectedly ({self._exit_text()})")
        self._received += self._receive_view[:got]

    def _read_message(self) -> tuple[int, int, bytes]:
        """The next message: its type, sequence and payload, parsed where it was received (one
        copy of the payload, none of the header)."""
        received = self._received
        while len(received) < _HEADER.size:
            self._receive_more()
        magic, version, kind, length, sequence = _HEADER.unpack_from(received)
        if magic != _MAGIC or version != PROTOCOL_VERSION:
            raise ForkServerError(
                f"{self._executable} speaks protocol {version} (magic {magic:#x}), this client"
                f" {PROTOCOL_VERSION}: reinstall cutaway so that both come from the same build"
            )
        end = _HEADER.size + length
        while len(received) < end:
            self._receive_more()
        payload = bytes(received[_HEADER.size : end])
        del received[:end]
        if kind == _FATAL_TYPE:
            raise ForkServerError(f"the fork server gave up: {payload.decode(errors='replace')}")
        return kind, sequence, payload

    def _exit_text(self) -> str:
        process = self._process
        if process is None:
            return "no process"
        try:
            return f"exit status {process.wait(timeout=1.0)}"
        except subprocess.TimeoutExpired:
            return "still running"


def _header(kind: int, length: int, sequence: int) -> bytes:
    return _HEADER.pack(_MAGIC, PROTOCOL_VERSION, kind, length, sequence)


def _encode_run_payload(
    path: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None,
    timeout_seconds: float | None,
    has_stdin: bool = False,
    keep_leftovers: bool = False,
    encoded_environment: bytes | None = None,
) -> bytes:
    """The RUN message's payload, after its header."""
    if not argv:
        raise ValueError("argv must hold at least the program name")
    timeout_ns = 0
    if timeout_seconds is not None:
        if not timeout_seconds > 0:
            raise ValueError(f"timeout_seconds must be positive or None, not {timeout_seconds}")
        timeout_ns = _nanoseconds(timeout_seconds)
    if encoded_environment is None:
        encoded_environment = encode_environment(env, path)
    strings = [os.fsencode(path)]
    strings += [os.fsencode(cwd)] if cwd is not None else []
    strings += [os.fsencode(argument) for argument in argv]
    if any(b"\0" in text for text in strings):
        raise ValueError(f"embedded null byte in the command line, env or cwd of {path}")
    flags = (_RUN_HAS_CWD if cwd is not None else 0) | (_RUN_HAS_STDIN if has_stdin else 0)
    flags |= _RUN_KEEP_LEFTOVERS if keep_leftovers else 0
    fixed = _RUN.pack(timeout_ns, flags, len(argv), len(env), 0)
    return fixed + b"".join(text + b"\0" for text in strings) + encoded_environment


def _nanoseconds(seconds: float) -> int:
    """A positive duration in ns, as the server takes it: at least 1, at most 146 years."""
    return min(_MAX_TIMEOUT_NS - 1, max(1, round(seconds * 1e9)))


def encode_environment(env: Mapping[str, str], path: str) -> bytes:
    """The RUN message's environment strings, each NAME=VALUE ending with a NUL."""
    for name in env:
        if not name or "=" in name:
            raise ValueError(f"illegal environment variable name: {name!r}")
    strings = [os.fsencode(name) + b"=" + os.fsencode(value) for name, value in env.items()]
    if any(b"\0" in text for text in strings):
        raise ValueError(f"embedded null byte in the command line, env or cwd of {path}")
    return b"".join(text + b"\0" for text in strings)


def _decode_result(payload: bytes) -> RawResult:
    """The fixed RESULT struct, then the leftovers' names, each ending with a NUL."""
    names = payload[_RESULT.size :]
    if len(payload) < _RESULT.size or (names and not names.endswith(b"\0")):
        raise ForkServerError(f"RESULT of {len(payload)} bytes, expected {_RESULT.size} and names")
    (pid, status, wall, user, sys, rss, minor, major, voluntary, involuntary, block_in,
     block_out, flags, leftovers) = _RESULT.unpack_from(payload)  # fmt: skip
    return RawResult(
        pid, status, wall, user, sys, rss, minor, major, voluntary, involuntary, block_in,
        block_out, timed_out=bool(flags & _RESULT_TIMED_OUT),
        interrupted=bool(flags & _RESULT_STOPPED),
        leftover_processes=leftovers,
        leftover_names=tuple(name.decode(errors="replace") for name in names.split(b"\0")[:-1]),
    )  # fmt: skip


def _spawn_error(number: int, stage: int, path: str, cwd: str | None) -> OSError:
    """What SPAWN_ERROR (or BLOCK_END) says, as the OSError (FileNotFoundError, ...) that
    subprocess would raise: naming the cwd when it is what failed, else the path."""
    if stage == _STAGE_CWD:
        return OSError(number, f"{os.strerror(number)} (working directory)", cwd)
    return OSError(number, os.strerror(number), path)


def _block_outcome(
    exchange: _BlockExchange,
    commands: Sequence[BlockCommand],
    order: Sequence[int],
    cwds: Sequence[str | None],
) -> BlockOutcome:
    """The BlockOutcome of what the block's replies said (without BLOCK_END: the server was
    lost after an interruption, and the results are those read)."""
    results = tuple(exchange.results)
    if exchange.end is None:
        return BlockOutcome(results, "interrupted")
    _, reason, number, stage = exchange.end
    stopped = _BLOCK_REASONS[reason]
    if stopped != "spawn-error":
        return BlockOutcome(results, stopped)
    index = order[len(results)]
    error = _spawn_error(number, stage, commands[index].path, cwds[index])
    return BlockOutcome(results, stopped, error)


def _refused_fds(error: OSError, exchange: _Exchange | _BlockExchange) -> bool:
    """sendmsg refuses a bad descriptor with EBADF before it sends a single byte."""
    return not exchange.sent and error.errno == errno.EBADF


def _kill_group(pid: int) -> None:
    """SIGKILL the child's process group. The server has not reaped the child yet (it is
    waiting for it), so neither its pid nor its group id can have been reused."""
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


def _signal_group(pid: int, number: int) -> None:
    """Send ``number`` to the child's process group, or to the child alone when it has no
    group of its own (yet): once, since a second SIGINT is "stop at once" to many programs."""
    try:
        os.killpg(pid, number)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, number)
