"""Hooks and interrupts, with real shells: an interrupt never leaves a hook behind, whenever it
lands."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from cutaway.model import Hooks, Variant
from cutaway.runner import hooks
from cutaway.runner.hooks import run_hook
from cutaway.runner.runner import RunnerError, run_experiment
from cutaway.spec import parse_spec
from cutaway.store import Store


def running(pid: int) -> bool:
    """Whether a process runs: a killed child of a process that is gone may stay a zombie
    until PID 1 collects it, which signal 0 cannot tell from a live one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def test_an_interrupt_while_the_hook_is_being_started_still_stops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = tmp_path / "started"

    class InterruptedWhileStarting(subprocess.Popen[bytes]):
        """The hook already runs, Popen has not returned yet: Ctrl-C lands now."""

        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            while not started.exists():
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the signal arrives here, inside the constructor

    monkeypatch.setattr(hooks.subprocess, "Popen", InterruptedWhileStarting)
    variant = Variant("v", ("true",), hooks=Hooks(setup=f"echo $$ > {started}; exec sleep 60"))
    with pytest.raises(KeyboardInterrupt):
        run_hook(variant, "setup")
    assert not running(int(started.read_text()))  # stopped, not left running


def test_a_hook_at_its_time_limit_is_stopped_with_its_children(tmp_path: Path) -> None:
    child = tmp_path / "child"
    variant = Variant("v", ("true",), hooks=Hooks(prepare=f"sleep 60 & echo $! > {child}; wait"))
    result = run_hook(variant, "prepare", timeout_seconds=0.5)
    assert result is not None and result.timed_out
    assert "timed out after 0.5 s" in result.outcome()
    time.sleep(0.2)
    assert not running(int(child.read_text()))


def test_an_interrupt_that_leaves_popens_wait_lock_held_does_not_hang(tmp_path: Path) -> None:
    """An interrupt landing inside Popen.wait can leave its internal lock held (bpo-29988);
    waiting for the hook again with Popen.wait then blocked for ever (found by the interrupt
    matrix in tests/integration/test_interrupts.py). Reproduced here by holding the lock."""
    process = subprocess.Popen(["sleep", "0.2"], process_group=0)
    process._waitpid_lock.acquire()  # what the interrupted Popen.wait left behind
    waiting = threading.Thread(
        target=hooks.stop_group,
        args=(process, hooks.INTERRUPT_GRACE_SECONDS),
        daemon=True,  # before the fix it never returned
    )
    waiting.start()
    waiting.join(10)
    assert not waiting.is_alive(), "waiting for the hook hung"
    assert process.returncode is not None


# -- output: read from a pipe as it comes, only its tail kept ------------------------------------


def test_a_hook_printing_50_mb_keeps_no_file_of_it_and_quotes_a_bounded_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its output went to a temporary file, which grew for as long as the hook printed (``yes``
    filled /tmp until hook_timeout). The hook reports what its standard output holds once it
    has printed 50 MB: a pipe holds nothing, a file 50 MB."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR read again
    command = 'yes | head -c 50000000; echo "stdout holds $(stat -L -c %s /proc/$$/fd/1)"; exit 3'
    variant = Variant("v", ("true",), hooks=Hooks(setup=command))
    result = run_hook(variant, "setup", timeout_seconds=600)
    assert result is not None and result.exit_code == 3  # it printed everything and ended
    assert len(result.output.encode()) <= hooks.OUTPUT_TAIL_BYTES
    *printed, last = result.output.splitlines()
    assert set(printed) == {"y"}
    held_bytes = int(last.removeprefix("stdout holds "))
    assert held_bytes < 1_000_000
    assert list(tmp_path.iterdir()) == []


def test_a_hook_printing_without_end_is_stopped_at_its_limit_and_quoted_bounded(
    tmp_path: Path,
) -> None:
    experiment = parse_spec(
        'name = "e"\nhook_timeout = "0.5s"\n'
        '[[variants]]\nname = "a"\ncommand = ["true"]\nsetup = "yes"\n'
    )
    with pytest.raises(RunnerError) as raised:
        run_experiment(experiment, Store(tmp_path / "cutaway.db"), environment={})
    message = str(raised.value)
    assert "setup hook `yes` timed out after 0.5 s" in message
    quoted = message.split("stopped): ", 1)[1]
    assert len(quoted) <= hooks.OUTPUT_TAIL_BYTES
    assert set(quoted.split()) == {"y"}


def test_a_hook_whose_child_keeps_its_output_open_ends_with_its_shell(tmp_path: Path) -> None:
    """The wait ends when the shell exits, not when the pipe closes; the child goes on printing
    (read and dropped: it neither blocks on a full pipe nor dies of SIGPIPE)."""
    child, done = tmp_path / "child", tmp_path / "done"
    command = (
        f"(sleep 0.3; yes | head -c 5000000; echo printed > {done}; exec sleep 60) & "
        f"echo $! > {child}; echo started"
    )
    variant = Variant("v", ("true",), hooks=Hooks(setup=command))
    results: list[hooks.HookResult | None] = []
    waiting = threading.Thread(target=lambda: results.append(run_hook(variant, "setup")))
    waiting.daemon = True  # before the fix it never returned
    try:
        waiting.start()
        waiting.join(60)
        assert not waiting.is_alive(), "the hook's wait lasted as long as its child"
        (result,) = results
        assert result is not None and result.ok and result.output == "started"
        deadline = time.monotonic() + 60
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert done.read_text() == "printed\n"
    finally:
        os.killpg(os.getpgid(int(child.read_text())), signal.SIGKILL)
