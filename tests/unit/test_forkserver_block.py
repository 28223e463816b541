"""The fork server's blocks (ForkServer.run_block), with real processes: the runs come back one
per order entry and in order; the block stops at its time limit, after an unusual run, at a
run that cannot start, and when the client is interrupted (STOP), leaving no child behind;
stderr holds the last run's only; the server stays in step for the next request; and a
malformed block is refused."""

from __future__ import annotations

import math
import os
import select
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType

import pytest

from cutaway.runner import forkserver
from cutaway.runner.forkserver import (
    BlockCommand,
    BlockOutcome,
    ForkServer,
    RawResult,
    executable_path,
)
from tests.unit.test_forkserver import DEVNULL, _children, _eventually, _running

TRUE = BlockCommand("/bin/true", ("true",), {}, None)
SH_EXIT_0 = BlockCommand("/bin/sh", ("sh", "-c", "exit 0"), {}, None)
PATH_ENV = {"PATH": "/usr/bin:/bin"}


@pytest.fixture
def server() -> Iterator[ForkServer]:
    with ForkServer() as started:
        yield started


def sh(script: str, *arguments: str, cwd: str | None = None) -> BlockCommand:
    return BlockCommand("/bin/sh", ("sh", "-c", script, *arguments), PATH_ENV, cwd)


def block(
    server: ForkServer,
    commands: Sequence[BlockCommand],
    order: Sequence[int],
    *,
    timeout_seconds: float | None = None,
    stdout_fd: int = DEVNULL,
    stderr_fd: int = DEVNULL,
    seconds: float = math.inf,
    keep_leftovers: bool = False,
) -> BlockOutcome:
    outcome = server.run_block(
        commands, order, timeout_seconds, stdout_fd, stderr_fd,
        seconds=seconds, keep_leftovers=keep_leftovers,
    )  # fmt: skip
    assert server.last_block == outcome
    return outcome


def _true_runs_normally(server: ForkServer) -> None:
    """The server answers a plain run() as before: it is in step."""
    assert server.run("/bin/true", ["true"], {}, None, None, DEVNULL, DEVNULL).exit_code == 0


def test_a_block_makes_one_run_per_order_entry_in_that_order(server: ForkServer) -> None:
    order = [0, 1, 1, 0, 0, 1, 0]
    outcome = block(server, [TRUE, SH_EXIT_0], order)
    assert outcome.stopped == "done" and outcome.spawn_error is None
    assert len(outcome.results) == len(order)
    assert len({result.pid for result in outcome.results}) == len(order)
    for result in outcome.results:
        assert (result.exit_code, result.timed_out, result.interrupted) == (0, False, False)
        assert result.wall_ns > 0 and result.max_rss_bytes > 0
        assert result.leftover_processes == 0
    _true_runs_normally(server)


def test_each_run_gets_its_commands_argv_env_and_cwd(server: ForkServer, tmp_path: Path) -> None:
    """Many commands, each its own: the output shows which ran, in the order given."""
    (tmp_path / "elsewhere").mkdir()
    script = 'echo "$0 $I $(pwd)"'
    elsewhere = str(tmp_path / "elsewhere")
    commands = [
        BlockCommand(
            "/bin/sh",
            ("sh", "-c", script, f"command{index}"),
            {"I": str(index * 7)},
            elsewhere if index % 2 else None,
        )
        for index in range(forkserver.BLOCK_MAX_COMMANDS)
    ]
    order = [(index * 37) % len(commands) for index in range(300)]  # each, and some twice
    with open(tmp_path / "out.txt", "wb") as out:
        outcome = block(server, commands, order, stdout_fd=out.fileno())
    assert outcome.stopped == "done" and len(outcome.results) == len(order)
    where = [os.path.realpath(os.getcwd()), os.path.realpath(elsewhere)]
    expected = [f"command{index} {index * 7} {where[index % 2]}" for index in order]
    assert (tmp_path / "out.txt").read_text().splitlines() == expected


def test_the_time_limit_ends_a_block_after_at_least_one_run(server: ForkServer) -> None:
    sleep = BlockCommand("/bin/sleep", ("sleep", "0.05"), {}, None)
    started = time.monotonic()
    outcome = block(server, [sleep], [0] * 1000, seconds=0.3)
    assert time.monotonic() - started < 10  # not the 50 s of the whole order
    assert outcome.stopped == "time"
    # Each run lasts 50 ms or more: after the sixth at the latest, 0.3 s have passed.
    assert 1 <= len(outcome.results) <= 6
    assert all(result.exit_code == 0 for result in outcome.results)
    one = block(server, [sleep], [0] * 1000, seconds=1e-6)
    assert (one.stopped, len(one.results)) == ("time", 1)  # a block always makes one run


@pytest.mark.parametrize(
    ("script", "options", "check"),
    [
        ("exit 3", {}, lambda result: result.exit_code == 3),
        ("kill -SEGV $$", {}, lambda result: result.signal == signal.SIGSEGV),
        ("exec sleep 10", {"timeout_seconds": 0.3}, lambda result: result.timed_out),
    ],
    ids=["exit-status", "signal", "timeout"],
)
def test_an_unusual_run_ends_the_block_and_is_the_last(
    server: ForkServer,
    script: str,
    options: dict[str, float],
    check: Callable[[RawResult], bool],
) -> None:
    outcome = block(server, [TRUE, sh(script)], [0, 0, 1, 0, 0], **options)  # type: ignore[arg-type]
    assert outcome.stopped == "unusual"
    assert [result.exit_code for result in outcome.results[:2]] == [0, 0]
    assert len(outcome.results) == 3 and check(outcome.results[2])
    assert not outcome.results[2].interrupted
    _true_runs_normally(server)


@pytest.mark.parametrize("keep_leftovers", [False, True])
def test_a_run_that_leaves_a_process_ends_the_block(
    server: ForkServer, tmp_path: Path, keep_leftovers: bool
) -> None:
    with open(tmp_path / "pids.txt", "wb") as out:
        outcome = block(
            server, [TRUE, sh("sleep 100 & echo $!")], [0, 1, 0, 0],
            stdout_fd=out.fileno(), keep_leftovers=keep_leftovers,
        )  # fmt: skip
    leftover = int((tmp_path / "pids.txt").read_text())
    try:
        assert outcome.stopped == "unusual" and len(outcome.results) == 2
        last = outcome.results[-1]
        assert last.exit_code == 0 and last.leftover_processes == 1
        assert _running(leftover) == keep_leftovers  # stopped by the server unless kept
    finally:
        if _running(leftover):
            os.kill(leftover, signal.SIGKILL)


def test_a_missing_program_ends_the_block_with_the_error_run_would_raise(
    server: ForkServer, tmp_path: Path
) -> None:
    missing = BlockCommand(str(tmp_path / "nonexistent"), ("nonexistent",), {}, None)
    outcome = block(server, [TRUE, missing], [0, 0, 1, 0])
    assert outcome.stopped == "spawn-error"
    assert [result.exit_code for result in outcome.results] == [0, 0]
    assert isinstance(outcome.spawn_error, FileNotFoundError)
    assert outcome.spawn_error.filename == str(tmp_path / "nonexistent")
    _true_runs_normally(server)


def test_a_missing_cwd_is_named_in_the_error(server: ForkServer, tmp_path: Path) -> None:
    nowhere = BlockCommand("/bin/true", ("true",), {}, str(tmp_path / "nowhere"))
    outcome = block(server, [TRUE, nowhere], [1, 0])
    assert outcome.stopped == "spawn-error" and outcome.results == ()
    assert isinstance(outcome.spawn_error, FileNotFoundError)
    assert outcome.spawn_error.filename == str(tmp_path / "nowhere")


def test_stderr_holds_the_last_runs_only(server: ForkServer, tmp_path: Path) -> None:
    long, short = sh("echo a long line from an earlier run >&2"), sh("echo last >&2")
    with open(tmp_path / "stderr.txt", "wb") as err:
        err.write(b"what was there before the block\n")
        err.flush()
        outcome = block(server, [long, short], [0, 0, 1], stderr_fd=err.fileno())
        assert outcome.stopped == "done"
        assert (tmp_path / "stderr.txt").read_text() == "last\n"
        # A failed run's tail is there to read, and nothing of the runs before it.
        failing = sh("echo it broke >&2; exit 3")
        outcome = block(server, [long, failing], [0, 0, 1, 0], stderr_fd=err.fileno())
        assert outcome.stopped == "unusual"
        assert (tmp_path / "stderr.txt").read_text() == "it broke\n"


class Interrupt(Exception):
    pass


def _raise_interrupt(signal_number: int, frame: FrameType | None) -> None:
    raise Interrupt


def _interrupt_after(kind: str, seconds: float) -> Callable[[], None]:
    """Arrange an interruption of the main thread ``seconds`` from now: a SIGALRM, or a SIGINT
    sent by another thread to this process, each with a handler that raises Interrupt.
    Returns what undoes it."""
    number = signal.SIGALRM if kind == "alarm" else signal.SIGINT
    previous = signal.signal(number, _raise_interrupt)
    if kind == "alarm":
        signal.setitimer(signal.ITIMER_REAL, seconds)
    else:
        sender = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
        sender.start()

    def undo() -> None:
        if kind == "alarm":
            signal.setitimer(signal.ITIMER_REAL, 0)
        else:
            sender.cancel()
            sender.join()
        signal.signal(number, previous)

    return undo


@pytest.mark.parametrize("kind", ["alarm", "sigint-from-a-thread"])
def test_an_interrupt_stops_the_block_and_its_child(server: ForkServer, kind: str) -> None:
    server_pid = server.server_pid
    assert server_pid is not None
    sleep = BlockCommand("/bin/sleep", ("sleep", "10"), {}, None)
    undo = _interrupt_after(kind, 0.5)
    started = time.monotonic()
    try:
        with pytest.raises(Interrupt):
            server.run_block([TRUE, sleep], [0, 0, 1, 1], None, DEVNULL, DEVNULL, seconds=60)
    finally:
        undo()
    assert time.monotonic() - started < 5  # not the 10 s of the sleep
    outcome = server.last_block
    assert outcome is not None and outcome.stopped == "interrupted"
    assert [(result.exit_code, result.interrupted) for result in outcome.results[:2]] == [
        (0, False),
        (0, False),
    ]
    assert len(outcome.results) == 3
    stopped = outcome.results[2]
    assert stopped.interrupted and stopped.signal == signal.SIGKILL
    assert not _running(stopped.pid)
    assert _children(server_pid) == []
    _true_runs_normally(server)
    assert server.server_pid == server_pid  # the same server, in step
    assert block(server, [TRUE], [0, 0]).stopped == "done"


def test_an_interrupt_after_the_block_ended_reports_it_as_it_ended(server: ForkServer) -> None:
    """The STOP crosses BLOCK_END: the server ignores it, and the outcome says "done"."""
    payload, _ = server._encode_block([TRUE], [0, 0, 0], None, math.inf, False)
    exchange = forkserver._BlockExchange(sequence=4242)
    server._send(forkserver._header(forkserver._BLOCK_TYPE, len(payload), 4242) + payload,
                 [DEVNULL, DEVNULL])  # fmt: skip
    exchange.sent = True
    assert server._socket is not None
    assert _eventually(lambda: server._socket is not None and _readable(server._socket))
    time.sleep(0.1)  # the whole reply is there: the block has ended
    server._stop_block(exchange)  # what run_block does when interrupted
    outcome = forkserver._block_outcome(exchange, [TRUE], [0, 0, 0], [None])
    assert outcome.stopped == "done" and len(outcome.results) == 3
    assert not any(result.interrupted for result in outcome.results)
    server_pid = server.server_pid
    _true_runs_normally(server)  # the stray STOP was read and ignored
    assert server.server_pid == server_pid


def _readable(connection: socket.socket) -> bool:
    return bool(select.select([connection], [], [], 0)[0])


def test_a_blocks_children_inherit_no_other_descriptor(server: ForkServer, tmp_path: Path) -> None:
    block(server, [TRUE], [0])  # the server holds the file of a block's results from now on
    ls = BlockCommand("/bin/ls", ("ls", "/proc/self/fd"), {}, None)
    with open(tmp_path / "fds.txt", "wb") as out:
        assert block(server, [ls], [0, 0], stdout_fd=out.fileno()).stopped == "done"
    listed = (tmp_path / "fds.txt").read_text().split()
    assert len(listed) == 2 * len(set(listed))  # both runs saw the same descriptors
    assert len(set(listed) - {"0", "1", "2"}) <= 1  # ls's own handle on /proc/self/fd


def test_a_block_holds_no_result_in_the_servers_memory(server: ForkServer) -> None:
    """The server's peak RSS is the floor of every max_rss it reports: a block's results wait
    in a file, so a long block does not raise it (1500 results would be 190 KB)."""
    block(server, [TRUE], [0] * 10)  # the first block makes the file

    def peak_kilobytes() -> int:
        status = Path(f"/proc/{server.server_pid}/status").read_text()
        return int(
            next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1]
        )

    before = peak_kilobytes()
    assert block(server, [TRUE], [0] * 1500).stopped == "done"
    assert peak_kilobytes() - before < 64


def test_blocks_leak_no_descriptors(server: ForkServer, tmp_path: Path) -> None:
    missing = BlockCommand(str(tmp_path / "nonexistent"), ("nonexistent",), {}, None)
    block(server, [TRUE], [0])
    server_fds = f"/proc/{server.server_pid}/fd"
    before = sorted(os.listdir("/proc/self/fd")), sorted(os.listdir(server_fds))
    for _ in range(20):
        block(server, [TRUE, sh("exit 3"), missing], [0, 0])
        block(server, [TRUE, sh("exit 3"), missing], [0, 1, 0])
        block(server, [TRUE, sh("exit 3"), missing], [0, 2, 0])
    assert (sorted(os.listdir("/proc/self/fd")), sorted(os.listdir(server_fds))) == before


@pytest.mark.parametrize(
    ("commands", "order", "seconds"),
    [
        ([], [0], 1.0),
        ([TRUE], [], 1.0),
        ([TRUE], [1], 1.0),
        ([TRUE], [-1], 1.0),
        ([TRUE] * (forkserver.BLOCK_MAX_COMMANDS + 1), [0], 1.0),
        ([TRUE], [0] * (forkserver.BLOCK_MAX_RUNS + 1), 1.0),
        ([TRUE], [0], 0.0),
        ([TRUE], [0], float("nan")),
        ([BlockCommand("/bin/true", (), {}, None)], [0], 1.0),
        ([BlockCommand("/bin/true", ("true",), {"A=B": "c"}, None)], [0], 1.0),
    ],
    ids=[
        "no-command", "no-run", "index-too-high", "index-negative", "too-many-commands",
        "too-many-runs", "no-time", "nan-time", "empty-argv", "bad-env-name",
    ],
)  # fmt: skip
def test_a_block_the_server_would_refuse_is_refused_before_anything_is_sent(
    server: ForkServer, commands: list[BlockCommand], order: list[int], seconds: float
) -> None:
    server_pid = server.server_pid
    with pytest.raises(ValueError):
        server.run_block(commands, order, None, DEVNULL, DEVNULL, seconds=seconds)
    assert block(server, [TRUE], [0]).stopped == "done"
    assert server.server_pid == server_pid


# -- the protocol by hand: what the server does with a malformed block or a stray STOP ---------


class RawServer:
    """A fork server spoken to through a bare socket, below the client's checks."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        command = [executable_path(), str(theirs.fileno()), str(os.getpid())]
        self.process = subprocess.Popen(
            command, pass_fds=[theirs.fileno()], stderr=subprocess.DEVNULL
        )
        theirs.close()
        self.socket = ours
        ours.settimeout(10)
        assert self.receive()[0] == forkserver._HELLO_TYPE

    def send(self, kind: int, sequence: int, payload: bytes = b"", fds: int = 0) -> None:
        message = forkserver._header(kind, len(payload), sequence) + payload
        socket.send_fds(self.socket, [message], [DEVNULL] * fds)

    def receive(self) -> tuple[int, int, bytes]:
        header = self.socket.recv(16, socket.MSG_WAITALL)
        _, _, kind, length, sequence = forkserver._HEADER.unpack(header)
        return kind, sequence, self.socket.recv(length, socket.MSG_WAITALL) if length else b""

    def close(self) -> int:
        self.socket.close()
        return self.process.wait(timeout=10)


def _block_payload(commands: Sequence[bytes], order: bytes, count: int | None = None) -> bytes:
    """A BLOCK payload from encoded commands and an encoded order (of ``count`` entries)."""
    entries = len(order) // 2 if count is None else count
    parts = [forkserver._BLOCK.pack(0, len(commands), entries)]
    for command in commands:
        parts += [struct.pack("=I", len(command)), command]
    return b"".join(parts) + order


def _command(path: str, argv: list[str], has_stdin: bool = False) -> bytes:
    return forkserver._encode_run_payload(path, argv, {}, None, None, has_stdin)


TRUE_PAYLOAD = _command("/bin/true", ["true"])


@pytest.mark.parametrize(
    ("payload", "fds"),
    [
        (_block_payload([TRUE_PAYLOAD], struct.pack("=H", 1)), 2),  # index out of range
        (_block_payload([TRUE_PAYLOAD], struct.pack("=2H", 0, 0), count=3), 2),  # order size
        (_block_payload([], struct.pack("=H", 0)), 2),  # no command
        (_block_payload([TRUE_PAYLOAD], b""), 2),  # no run
        (_block_payload([TRUE_PAYLOAD[:-1]], struct.pack("=H", 0)), 2),  # a string cut short
        (_block_payload([_command("/bin/true", ["true"], True)], struct.pack("=H", 0)), 2),
        (_block_payload([TRUE_PAYLOAD], struct.pack("=H", 0)), 3),  # a third descriptor
        (_block_payload([TRUE_PAYLOAD], struct.pack("=H", 0))[:-6], 2),  # cut short
    ],
    ids=[
        "index", "order-size", "no-command", "no-run", "string", "stdin", "descriptors",
        "truncated",
    ],
)  # fmt: skip
def test_a_malformed_block_is_fatal(payload: bytes, fds: int) -> None:
    raw = RawServer()
    raw.send(forkserver._BLOCK_TYPE, 1, payload, fds)
    assert raw.receive()[0] == forkserver._FATAL_TYPE
    assert raw.close() == 2


def test_a_well_formed_block_by_hand_runs() -> None:
    """The counterpart of the malformed ones: the same framing, correct, is served."""
    raw = RawServer()
    raw.send(forkserver._BLOCK_TYPE, 3, _block_payload([TRUE_PAYLOAD], struct.pack("=2H", 0, 0)), 2)
    replies = [raw.receive() for _ in range(3)]
    assert [(kind, sequence) for kind, sequence, _ in replies] == [
        (forkserver._RESULT_TYPE, 3),
        (forkserver._RESULT_TYPE, 3),
        (forkserver._BLOCK_END_TYPE, 3),
    ]
    assert forkserver._BLOCK_END.unpack(replies[2][2]) == (2, 1, 0, 0)  # two runs, done
    assert raw.close() == 0


def test_a_stop_for_no_block_in_progress_is_ignored() -> None:
    raw = RawServer()
    raw.send(forkserver._STOP_TYPE, 9)  # between requests
    sleep = _command("/bin/sleep", ["sleep", "0.3"])
    raw.send(forkserver._BLOCK_TYPE, 10, _block_payload([sleep], struct.pack("=2H", 0, 0)), 2)
    assert _eventually(lambda: _children(raw.process.pid))  # the first run
    raw.send(forkserver._STOP_TYPE, 9)  # during a block, but not this block's
    kinds = [raw.receive()[0] for _ in range(3)]
    assert kinds == [forkserver._RESULT_TYPE, forkserver._RESULT_TYPE, forkserver._BLOCK_END_TYPE]
    raw.send(forkserver._BLOCK_TYPE, 11, _block_payload([sleep], struct.pack("=2H", 0, 0)), 2)
    assert _eventually(lambda: _children(raw.process.pid))
    raw.send(forkserver._STOP_TYPE, 11)  # this block's: its running child is stopped
    kind, _, result = raw.receive()
    assert kind == forkserver._RESULT_TYPE
    stopped = forkserver._decode_result(result)
    assert stopped.interrupted and stopped.signal == signal.SIGKILL
    kind, _, end = raw.receive()
    assert kind == forkserver._BLOCK_END_TYPE
    assert forkserver._BLOCK_END.unpack(end)[:2] == (1, 5)  # one run, stopped
    assert raw.close() == 0


def test_a_stop_that_comes_between_two_runs_ends_the_block_before_the_next() -> None:
    raw = RawServer()
    payload = _block_payload([TRUE_PAYLOAD], b"\0\0")
    block_message = forkserver._header(forkserver._BLOCK_TYPE, len(payload), 5) + payload
    stop = forkserver._header(forkserver._STOP_TYPE, 0, 5)
    # In one send: the STOP is there before the block's first spawn.
    socket.send_fds(raw.socket, [block_message + stop], [DEVNULL, DEVNULL])
    kind, sequence, end = raw.receive()
    assert (kind, sequence) == (forkserver._BLOCK_END_TYPE, 5)
    assert forkserver._BLOCK_END.unpack(end) == (0, 5, 0, 0)  # no run, stopped
    raw.send(forkserver._BLOCK_TYPE, 6, payload, 2)  # in step
    assert [raw.receive()[0] for _ in range(2)] == [
        forkserver._RESULT_TYPE,
        forkserver._BLOCK_END_TYPE,
    ]
    assert raw.close() == 0


def test_anything_but_stop_during_a_block_is_fatal_and_kills_the_child() -> None:
    raw = RawServer()
    sleep = _command("/bin/sleep", ["sleep", "30"])
    raw.send(forkserver._BLOCK_TYPE, 1, _block_payload([sleep], struct.pack("=H", 0)), 2)
    assert _eventually(lambda: _children(raw.process.pid))
    child = _children(raw.process.pid)[0]
    raw.send(forkserver._RUN_TYPE, 2, TRUE_PAYLOAD, 2)
    assert raw.receive()[0] == forkserver._FATAL_TYPE
    assert raw.close() == 2
    assert not _running(child)


def test_the_server_kills_a_blocks_child_when_the_client_hangs_up() -> None:
    raw = RawServer()
    sleep = _command("/bin/sleep", ["sleep", "30"])
    raw.send(forkserver._BLOCK_TYPE, 1, _block_payload([sleep], struct.pack("=H", 0)), 2)
    assert _eventually(lambda: _children(raw.process.pid))
    child = _children(raw.process.pid)[0]
    assert raw.close() == 0
    assert _eventually(lambda: not _running(child))
