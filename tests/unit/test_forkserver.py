"""The native fork server, with real processes: what a child gets (exit status, signals, cwd,
env), what the record says (rusage of that child only, a small max_rss floor), and that no
child and no server is ever left behind (timeouts, interrupts, a dying client or server)."""

from __future__ import annotations

import gc
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

import pytest

import cutaway
from cutaway.runner import forkserver
from cutaway.runner.forkserver import ForkServer, ForkServerError, RawResult, executable_path

SRC_DIR = str(Path(cutaway.__file__).resolve().parent.parent)
DEVNULL = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)  # open for the whole session


@pytest.fixture
def server() -> Iterator[ForkServer]:
    with ForkServer() as started:
        yield started


def _run_request(sequence: int, path: str, argv: list[str], has_stdin: bool = False) -> bytes:
    """A RUN message as the client sends it: its header, then its payload."""
    payload = forkserver._encode_run_payload(path, argv, {}, None, None, has_stdin)
    return forkserver._header(forkserver._RUN_TYPE, len(payload), sequence) + payload


def run(server: ForkServer, argv: list[str], **options: object) -> RawResult:
    """Run argv[0] (an absolute path) with an empty env, output to /dev/null by default."""
    return server.run(argv[0], argv, **{**_defaults(), **options})  # type: ignore[arg-type]


def _defaults() -> dict[str, object]:
    return {
        "env": {},
        "cwd": None,
        "timeout_seconds": None,
        "stdout_fd": DEVNULL,
        "stderr_fd": DEVNULL,
    }


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name: [state, ppid, pgrp, ...], None when gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphaned zombie waits for init, which may be slow to reap)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                members.append(int(entry))
    return members


def _eventually(condition: Callable[[], object], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_the_installed_executable_exists() -> None:
    assert os.access(executable_path(), os.X_OK)


def test_exit_code_passes_through(server: ForkServer) -> None:
    result = run(server, ["/bin/sh", "-c", "exit 3"])
    assert (result.exit_code, result.signal, result.timed_out) == (3, None, False)
    assert run(server, ["/bin/true"]).exit_code == 0


def test_death_by_signal_is_reported(server: ForkServer) -> None:
    result = run(server, ["/bin/sh", "-c", "kill -SEGV $$"])
    assert (result.exit_code, result.signal) == (None, signal.SIGSEGV)


def test_the_child_leads_a_process_group_of_its_own(server: ForkServer, tmp_path: Path) -> None:
    with open(tmp_path / "stat.txt", "wb") as out:
        result = run(server, ["/bin/sh", "-c", "cat /proc/$$/stat"], stdout_fd=out.fileno())
    process_group = int((tmp_path / "stat.txt").read_text().rsplit(")", 1)[1].split()[2])
    assert process_group == result.pid != os.getpgrp()


def test_the_child_inherits_no_other_descriptor(server: ForkServer, tmp_path: Path) -> None:
    with open(tmp_path / "fds.txt", "wb") as out:
        run(server, ["/bin/ls", "/proc/self/fd"], stdout_fd=out.fileno())
    extra = set((tmp_path / "fds.txt").read_text().split()) - {"0", "1", "2"}
    assert len(extra) <= 1  # ls's own handle on /proc/self/fd; not the server's socket


def test_the_child_starts_with_default_signals_and_an_empty_mask(
    server: ForkServer, tmp_path: Path
) -> None:
    # The server itself ignores SIGINT/SIGTERM/SIGQUIT/SIGPIPE and blocks two others.
    with open(tmp_path / "status.txt", "wb") as out:
        grep = ["/bin/grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"]
        run(server, grep, stdout_fd=out.fileno())
    masks = dict(line.split(":\t") for line in (tmp_path / "status.txt").read_text().splitlines())
    assert int(masks["SigBlk"], 16) == 0
    # glibc's posix_spawn leaves its two internal signals (32, 33: bits 31, 32) ignored in
    # every child, as in hyperfine's; no glibc program can see them. All others: default.
    assert int(masks["SigIgn"], 16) & ~(1 << 31 | 1 << 32) == 0


def test_timeout_kills_the_whole_process_group(server: ForkServer, tmp_path: Path) -> None:
    script = "sleep 30 & echo $!; sleep 30 & echo $!; wait"
    with open(tmp_path / "pids.txt", "wb") as out:
        result = run(server, ["/bin/sh", "-c", script], timeout_seconds=0.3, stdout_fd=out.fileno())
    sleeps = [int(pid) for pid in (tmp_path / "pids.txt").read_text().split()]
    try:
        assert result.timed_out
        assert result.signal == signal.SIGKILL
        assert result.wall_ns >= 300_000_000
        assert len(sleeps) == 2
        assert _eventually(lambda: not any(_running(pid) for pid in sleeps))
        assert _group_members(result.pid) == []
        assert result.leftover_processes == 0  # the group the server killed is not counted
    finally:
        for pid in sleeps:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


def test_cwd_and_env_are_applied_exactly(
    server: ForkServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"ONLY": "this", "SPACED": "two words"}
    with open(tmp_path / "env.txt", "wb") as out:
        run(server, ["/usr/bin/env"], env=env, stdout_fd=out.fileno())
    assert (tmp_path / "env.txt").read_text() == "ONLY=this\nSPACED=two words\n"
    (tmp_path / "sub").mkdir()
    with open(tmp_path / "pwd.txt", "wb") as out:
        run(server, ["/bin/pwd"], cwd=str(tmp_path / "sub"), stdout_fd=out.fileno())
        monkeypatch.chdir(tmp_path)  # cwd=None: where the caller is now, not the server
        run(server, ["/bin/pwd"], stdout_fd=out.fileno())
    expected = [os.path.realpath(tmp_path / "sub"), os.path.realpath(tmp_path)]
    assert (tmp_path / "pwd.txt").read_text().split() == expected


def test_each_run_gets_its_own_command_line_and_environment_when_requests_repeat(
    server: ForkServer, tmp_path: Path
) -> None:
    """The server keeps encoded requests for reuse: a repeated one, and one that differs in a
    single argument, timeout or variable, still runs exactly what was asked."""
    requests: list[tuple[list[str], dict[str, str], float | None]] = [
        (["/bin/sh", "-c", "echo $A $0", "one"], {"A": "x"}, None),
        (["/bin/sh", "-c", "echo $A $0", "two"], {"A": "x"}, None),
        (["/bin/sh", "-c", "echo $A $0", "one"], {"A": "x"}, 30.0),
        (["/bin/sh", "-c", "echo $A $0", "one"], {"A": "y"}, None),
        (["/bin/sh", "-c", "echo $A $0", "one"], {"A": "x"}, None),
    ]
    with open(tmp_path / "out.txt", "wb") as out:
        for argv, env, timeout in requests:
            result = run(server, argv, env=env, timeout_seconds=timeout, stdout_fd=out.fileno())
            assert result.exit_code == 0
    lines = (tmp_path / "out.txt").read_text().splitlines()
    assert lines == ["x one", "x two", "x one", "y one", "x one"]


def test_stdin_is_dev_null(server: ForkServer, tmp_path: Path) -> None:
    with open(tmp_path / "out.txt", "wb") as out:
        run(server, ["/bin/sh", "-c", "cat; echo end"], stdout_fd=out.fileno())
    assert (tmp_path / "out.txt").read_text() == "end\n"


def test_stdin_is_the_descriptor_given(server: ForkServer, tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("fed\n")
    with open(tmp_path / "in.txt", "rb") as given, open(tmp_path / "out.txt", "wb") as out:
        result = run(server, ["/bin/sh", "-c", "cat; echo end"], stdout_fd=out.fileno(),
                     stdin_fd=given.fileno())  # fmt: skip
    assert result.exit_code == 0
    assert (tmp_path / "out.txt").read_text() == "fed\nend\n"
    with open(tmp_path / "out.txt", "wb") as out:  # the next run without one: /dev/null again
        run(server, ["/bin/sh", "-c", "cat; echo end"], stdout_fd=out.fileno())
    assert (tmp_path / "out.txt").read_text() == "end\n"


def test_a_request_with_the_wrong_number_of_descriptors_is_fatal() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    command = [executable_path(), str(theirs.fileno()), str(os.getpid())]
    process = subprocess.Popen(command, pass_fds=[theirs.fileno()], stderr=subprocess.DEVNULL)
    theirs.close()
    with ours:
        ours.recv(24, socket.MSG_WAITALL)  # HELLO
        request = _run_request(1, "/bin/true", ["true"], True)
        socket.send_fds(ours, [request], [DEVNULL, DEVNULL])  # HAS_STDIN, but two descriptors
        header = ours.recv(16, socket.MSG_WAITALL)
        assert struct.unpack("=IHHII", header)[2] == 6  # FATAL
    assert process.wait(timeout=5) == 2


def test_spawn_failures_raise_oserror_and_the_server_carries_on(
    server: ForkServer, tmp_path: Path
) -> None:
    server_pid = server.server_pid
    with pytest.raises(FileNotFoundError) as missing:
        run(server, [str(tmp_path / "nonexistent")])
    assert missing.value.filename == str(tmp_path / "nonexistent")
    with pytest.raises(FileNotFoundError) as no_cwd:
        run(server, ["/bin/true"], cwd=str(tmp_path / "nowhere"))
    assert no_cwd.value.filename == str(tmp_path / "nowhere")
    (tmp_path / "data").write_text("not a program")
    with pytest.raises(PermissionError):
        run(server, [str(tmp_path / "data")])
    assert run(server, ["/bin/true"]).exit_code == 0
    assert server.server_pid == server_pid


@pytest.mark.parametrize(
    ("argv", "options"),
    [
        ([], {}),
        (["/bin/true", "nul\0byte"], {}),
        (["/bin/true"], {"env": {"A=B": "c"}}),
        (["/bin/true"], {"timeout_seconds": 0.0}),
        (["/bin/true"], {"timeout_seconds": float("nan")}),
    ],
)
def test_invalid_requests_are_refused_before_anything_is_sent(
    server: ForkServer, argv: list[str], options: dict[str, object]
) -> None:
    with pytest.raises(ValueError):
        server.run("/bin/true", argv, **{**_defaults(), **options})  # type: ignore[arg-type]
    assert run(server, ["/bin/true"], timeout_seconds=1e12).exit_code == 0


def test_max_rss_is_the_childs_own_not_the_callers() -> None:
    ballast = bytearray(b"\x01") * (100 * 2**20)  # written, hence resident
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 > 100 * 2**20
    with ForkServer() as server:  # started from the large process, too
        result = run(server, ["/bin/true"])
    assert 0 < result.max_rss_bytes < 4 * 2**20
    del ballast


def test_cpu_bound_child_has_cpu_times(server: ForkServer) -> None:
    result = run(server, [sys.executable, "-c", "sum(range(10**7))"])
    assert result.exit_code == 0
    assert result.user_ns > 0
    assert result.sys_ns >= 0
    assert result.wall_ns >= result.user_ns
    assert result.minor_faults > 0


class Alarm(Exception):
    pass


def _raise_alarm(signal_number: int, frame: FrameType | None) -> None:
    raise Alarm


def test_an_interrupt_kills_the_child_and_leaves_the_server_usable(server: ForkServer) -> None:
    server_pid = server.server_pid
    previous = signal.signal(signal.SIGALRM, _raise_alarm)
    started = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(Alarm):
            run(server, ["/bin/sleep", "30"])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 10  # not the 30 s of the sleep
    interrupted = server.last_result
    assert interrupted is not None and interrupted.interrupted
    assert interrupted.signal == signal.SIGKILL
    assert not _running(interrupted.pid)
    assert run(server, ["/bin/true"]).exit_code == 0
    assert server.server_pid == server_pid  # the same server, in step


# Ends with status 7 on SIGINT (after its "ready" line); "deaf" ignores SIGINT.
GRACEFUL = (
    "import signal, sys, time\n"
    "action = signal.SIG_IGN if sys.argv[1] == 'deaf' else (lambda *_: sys.exit(7))\n"
    "signal.signal(signal.SIGINT, action)\n"
    "print('ready', flush=True)\n"
    "time.sleep(30)\n"
)


def _interrupted_when_ready(server: ForkServer, mode: str, grace: float) -> RawResult | None:
    """Runs GRACEFUL with a grace period, interrupted (an alarm) once it said it is ready."""
    read_end, write_end = os.pipe()
    previous = signal.signal(signal.SIGALRM, _raise_alarm)
    try:
        ready = threading.Thread(
            target=lambda: os.read(read_end, 6) and signal.setitimer(signal.ITIMER_REAL, 0.05)
        )
        ready.start()
        with pytest.raises(Alarm):
            argv = [sys.executable, "-c", GRACEFUL, mode]
            run(server, argv, stdout_fd=write_end, interrupt_grace_seconds=grace)
        ready.join()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        os.close(read_end)
        os.close(write_end)
    return server.last_result


def test_an_interrupt_with_a_grace_period_lets_the_child_end_on_its_own(
    server: ForkServer,
) -> None:
    result = _interrupted_when_ready(server, "graceful", grace=20)
    assert result is not None and result.interrupted
    assert result.exit_code == 7 and result.signal is None  # its own exit, after SIGINT
    assert run(server, ["/bin/true"]).exit_code == 0  # the server is in step


def test_a_child_that_ignores_the_interrupt_is_killed_after_the_grace_period(
    server: ForkServer,
) -> None:
    result = _interrupted_when_ready(server, "deaf", grace=0.3)
    assert result is not None and result.interrupted
    assert result.signal == signal.SIGKILL
    assert not _running(result.pid)
    assert run(server, ["/bin/true"]).exit_code == 0


def test_a_dead_server_is_an_error_and_its_child_is_killed(server: ForkServer) -> None:
    server_pid = server.server_pid
    assert server_pid is not None
    orphans: list[int] = []

    def kill_server(signal_number: int, frame: FrameType | None) -> None:
        orphans.extend(_children(server_pid))
        os.kill(server_pid, signal.SIGKILL)

    previous = signal.signal(signal.SIGALRM, kill_server)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(ForkServerError):
            run(server, ["/bin/sleep", "30"])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert len(orphans) == 1  # the sleep, which only the client can stop now
    assert _eventually(lambda: not _running(orphans[0]))
    assert run(server, ["/bin/true"]).exit_code == 0  # a fresh server
    assert server.server_pid != server_pid


def test_the_server_ignores_terminal_signals(server: ForkServer) -> None:
    assert server.server_pid is not None
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT):
        os.kill(server.server_pid, number)
    assert run(server, ["/bin/true"]).exit_code == 0


def test_close_is_idempotent_and_stops_the_server() -> None:
    server = ForkServer()
    server_pid = server.server_pid
    assert server_pid is not None and _running(server_pid)
    server.close()
    server.close()
    assert not _running(server_pid)
    assert server.server_pid is None
    with pytest.raises(ForkServerError):
        run(server, ["/bin/true"])


def test_a_server_started_by_a_thread_that_ended_still_serves() -> None:
    # PR_SET_PDEATHSIG fires when the *thread* that started the server exits: the server must
    # tell that apart from the death of its parent process.
    servers: list[ForkServer] = []
    starter = threading.Thread(target=lambda: servers.append(ForkServer()))
    starter.start()
    starter.join()
    with servers[0] as server:
        time.sleep(0.05)
        assert run(server, ["/bin/true"]).exit_code == 0


CLIENT = """
import os, sys, time
from cutaway.runner.forkserver import ForkServer
server = ForkServer()
print(server.server_pid, flush=True)
if sys.argv[1] == "run":
    server.run("/bin/sleep", ["sleep", "30"], {}, None, None, 1, 2)
elif sys.argv[1] == "escape":  # the run leaves a process out of its group, then waits
    script = "setsid sleep 30 & echo $!; exec sleep 30"
    server.run("/bin/sh", ["sh", "-c", script], {"PATH": "/usr/bin:/bin"}, None, None, 1, 2)
elif os.fork() == 0:  # "hold": a child keeps the socket open, so no EOF reaches the server
    time.sleep(30)
    os._exit(0)
time.sleep(30)
"""


@pytest.mark.parametrize("mode", ["run", "hold", "escape"])
def test_no_server_or_child_outlives_a_killed_client(mode: str) -> None:
    env = {**os.environ, "PYTHONPATH": SRC_DIR}
    command = [sys.executable, "-c", CLIENT, mode]
    with subprocess.Popen(command, stdout=subprocess.PIPE, env=env, text=True) as client:
        assert client.stdout is not None
        server_pid = int(client.stdout.readline())
        if mode == "escape":
            escaped = int(client.stdout.readline())
            assert _running(escaped)
        if mode in ("run", "escape"):
            assert _eventually(lambda: _children(server_pid))  # the sleep
        else:
            assert _eventually(lambda: len(_children(client.pid)) == 2)  # server, holder
        children = _children(server_pid)
        holders = _children(client.pid)
        client.kill()
    try:
        assert _eventually(lambda: not _running(server_pid))
        assert not any(_running(pid) for pid in children)
        if mode == "escape":  # out of the run's group: found under the server, stopped
            assert _eventually(lambda: not _running(escaped))
    finally:
        if mode == "escape" and _running(escaped):
            os.kill(escaped, signal.SIGKILL)
        for pid in holders:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


def test_the_server_kills_its_child_when_the_client_hangs_up() -> None:
    # Below the client, which would kill the child itself: speak the protocol by hand.
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    command = [executable_path(), str(theirs.fileno()), str(os.getpid())]
    process = subprocess.Popen(command, pass_fds=[theirs.fileno()])
    theirs.close()
    with ours:
        hello = ours.recv(24, socket.MSG_WAITALL)
        assert struct.unpack("=IHHIIiI", hello)[2] == 1  # HELLO
        request = _run_request(7, "/bin/sleep", ["sleep", "30"])
        socket.send_fds(ours, [request], [DEVNULL, DEVNULL])
        *_, sequence, pid, _ = struct.unpack("=IHHIIiI", ours.recv(24, socket.MSG_WAITALL))
        assert sequence == 7 and _running(pid)
    assert process.wait(timeout=5) == 0
    assert _eventually(lambda: not _running(pid))


def test_a_thousand_runs_leak_no_descriptors(server: ForkServer) -> None:
    # Earlier tests' unreachable servers would otherwise close their sockets whenever the
    # collector happens to run during the loop, and our descriptor list would shrink.
    gc.collect()
    server_fds = f"/proc/{server.server_pid}/fd"
    before = sorted(os.listdir("/proc/self/fd")), sorted(os.listdir(server_fds))
    for _ in range(1000):
        run(server, ["/bin/true"])
    assert (sorted(os.listdir("/proc/self/fd")), sorted(os.listdir(server_fds))) == before


# -- leftovers: what a run leaves running after its own process is reaped ----------------------


def _run_printing_pids(
    server: ForkServer, tmp_path: Path, script: str, **options: object
) -> tuple[RawResult, list[int]]:
    """Run ``sh -c script`` (which prints the pids it leaves behind, one a line)."""
    with open(tmp_path / "pids.txt", "wb") as out:
        env = {"PATH": "/usr/bin:/bin"}
        result = run(server, ["/bin/sh", "-c", script], env=env, stdout_fd=out.fileno(), **options)
    return result, [int(pid) for pid in (tmp_path / "pids.txt").read_text().split()]


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        if _running(pid):
            os.kill(pid, signal.SIGKILL)


def _zombie_children(pid: int | None) -> list[int]:
    assert pid is not None
    zombies = []
    for entry in os.listdir("/proc"):
        fields = _stat_fields(int(entry)) if entry.isdigit() else None
        if fields is not None and int(fields[1]) == pid and fields[0] in ("Z", "X"):
            zombies.append(int(entry))
    return zombies


@pytest.mark.parametrize(
    "script",
    [
        "sleep 100 & echo $!",  # stays in the run's process group
        "setsid sleep 100 & echo $!",  # a session (and group) of its own
        "(setsid sleep 100 & echo $!); true",  # a double fork: its parent is gone too
        "sleep 100 & echo $!; kill -STOP $!",  # stopped: acts on SIGTERM once resumed
    ],
    ids=["group", "setsid", "double-fork", "stopped"],
)
def test_what_a_run_leaves_running_is_counted_stopped_and_reaped(
    server: ForkServer, tmp_path: Path, script: str
) -> None:
    result, pids = _run_printing_pids(server, tmp_path, script)
    try:
        assert result.exit_code == 0 and len(pids) == 1
        assert result.leftover_processes == 1
        # Found between its fork and its exec, a leftover may still have the name before.
        assert len(result.leftover_names) == 1
        assert result.leftover_names[0] in ("sleep", "sh", "setsid")
        # Stopped and reaped before run() returned: not even a zombie is left.
        assert _stat_fields(pids[0]) is None
        assert _zombie_children(server.server_pid) == []
        assert run(server, ["/bin/true"]).leftover_processes == 0
    finally:
        _kill_all(pids)


def test_a_leftover_that_ignores_sigterm_is_killed(server: ForkServer, tmp_path: Path) -> None:
    script = "trap '' TERM; sleep 100 & echo $!; setsid sh -c 'trap \"\" TERM; sleep 100' &"
    result, pids = _run_printing_pids(server, tmp_path, script)
    try:
        assert result.leftover_processes >= 2
        assert _stat_fields(pids[0]) is None
        assert _zombie_children(server.server_pid) == []
        assert run(server, ["/bin/true"]).leftover_processes == 0
    finally:
        _kill_all(pids)


def test_an_escaped_leftover_of_a_timed_out_run_is_counted(
    server: ForkServer, tmp_path: Path
) -> None:
    escape = "setsid sh -c 'touch escaped; exec sleep 100' & echo $!"  # touch: it is out
    script = f"{escape}; until [ -e escaped ]; do sleep 0.01; done; sleep 100 & sleep 100"
    options = {"timeout_seconds": 1.5, "cwd": str(tmp_path)}
    result, pids = _run_printing_pids(server, tmp_path, script, **options)
    try:
        assert result.timed_out
        assert result.leftover_processes == 1  # the group members the timeout killed are not
        assert _stat_fields(pids[0]) is None
    finally:
        _kill_all(pids)


def test_kept_leftovers_run_on_and_are_not_counted_again(
    server: ForkServer, tmp_path: Path
) -> None:
    kept = {"keep_leftovers": True}
    result, pids = _run_printing_pids(server, tmp_path, "setsid sleep 100 & echo $!", **kept)
    try:
        assert result.leftover_processes == 1 and _running(pids[0])
        assert run(server, ["/bin/true"], **kept).leftover_processes == 0
        again, more = _run_printing_pids(server, tmp_path, "sleep 100 & echo $!", **kept)
        pids += more
        assert again.leftover_processes == 1
        server.close()
        assert all(_running(pid) for pid in pids)  # the server's end does not stop them
    finally:
        _kill_all(pids)


def test_a_kept_leftover_that_exits_is_reaped(server: ForkServer, tmp_path: Path) -> None:
    kept = {"keep_leftovers": True}
    result, pids = _run_printing_pids(server, tmp_path, "sleep 0.1 & echo $!", **kept)
    try:
        assert result.leftover_processes == 1
        time.sleep(0.3)  # it has exited: a zombie of the server, until the next run ends
        assert run(server, ["/bin/true"], **kept).leftover_processes == 0
        assert _stat_fields(pids[0]) is None
        assert _zombie_children(server.server_pid) == []
    finally:
        _kill_all(pids)


def test_a_decoded_result_is_the_record_its_fields_make() -> None:
    """RESULT is decoded without RawResult's __init__: every field lands where __init__ puts
    it, each figure distinct so that two swapped fields cannot pass, names and all."""
    figures = [1000 + index for index in range(12)]
    payload = forkserver._RESULT.pack(*figures, forkserver._RESULT_TIMED_OUT, 2) + b"sleep\0sh\0"
    decoded = forkserver._decode_result(payload)
    expected = RawResult(
        *figures, timed_out=True, interrupted=False, leftover_processes=2,
        leftover_names=("sleep", "sh"),
    )  # fmt: skip
    assert decoded == expected
    assert vars(decoded) == vars(expected)  # no field more, none less
    assert hash(decoded) == hash(expected)
    plain = forkserver._decode_result(forkserver._RESULT.pack(*figures, 0, 0))
    assert (plain.timed_out, plain.leftover_processes, plain.leftover_names) == (False, 0, ())
