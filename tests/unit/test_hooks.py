"""Hooks and interrupts, with real shells: an interrupt never leaves a hook behind, whenever it
lands."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from cutaway.model import Hooks, Variant
from cutaway.runner import hooks
from cutaway.runner.hooks import run_hook


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
