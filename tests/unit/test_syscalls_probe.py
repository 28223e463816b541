"""The syscalls probe: parsing recorded strace -T output, and a real traced run."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import numpy as np
import pytest

from cutaway.model import RunStatus, Variant
from cutaway.probes.calls.capture import decode_calls
from cutaway.probes.syscalls.capture import SyscallsProbe, check_syscall_names, parse_trace
from cutaway.probes.timed_calls import CALL_DTYPE
from cutaway.runner.executor import ProcessExecutor

FIXTURES = Path(__file__).parent.parent / "fixtures"


def test_parse_recorded_trace_counts_positions_durations_and_errors() -> None:
    text = (FIXTURES / "strace-T-cat.txt").read_text()
    parsed = parse_trace(text, ["openat", "close", "fsync"])
    assert "fsync" not in parsed
    opens = parsed["openat"]
    assert opens.dtype == CALL_DTYPE
    assert list(opens["call_index"]) == list(range(1, len(opens) + 1))
    lines = [line for line in text.splitlines() if line.startswith("openat(")]
    assert len(opens) == len(lines)
    assert opens["duration_ns"][0] == round(float(lines[0].rsplit("<", 1)[1][:-1]) * 1e9)
    failed = [i for i, line in enumerate(lines) if "= -1 ENOENT" in line]
    assert failed and all(opens["error"][i] == errno.ENOENT for i in failed)
    assert (np.delete(opens["error"], failed) == 0).all()


def test_unknown_lines_and_other_calls_are_ignored() -> None:
    text = '--- SIGCHLD {si_signo=SIGCHLD} ---\nread(0, "", 1) = 0 <0.000002>\n+++ exited +++\n'
    assert parse_trace(text, ["openat"]) == {}


def test_lines_whose_duration_is_damaged_are_ignored() -> None:
    """Found by tests/fuzz/test_fuzz_imports.py: these were ValueError and OverflowError."""
    good = "close(3)                                = 0 <0.000005>"
    damaged = [f"close(4) = 0 <{seconds}>" for seconds in ("1.2.3", ".", "9" * 400, "")]
    parsed = parse_trace("\n".join([*damaged, good]), ["close"])
    assert parsed["close"]["duration_ns"].tolist() == [5000]
    assert parsed["close"]["call_index"].tolist() == [1]


def test_syscall_names_are_checked() -> None:
    assert check_syscall_names(["fsync", "openat", "fsync"]) == ("fsync", "openat")
    with pytest.raises(ValueError):
        check_syscall_names(["fsync; rm -rf /"])


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_a_real_run_is_traced_per_process() -> None:
    probe = SyscallsProbe(["openat", "fsync"])
    executor = ProcessExecutor()
    try:
        assert "strace" in probe.check()
        attachment = probe.before_run({})
        variant = Variant("v", "cat /etc/hostname /nonexistent; sync; true", shell=True)
        measured = executor.measure(variant, 30, attachment)
        assert measured.status is RunStatus.OK
        data = {item.key: decode_calls(item.data) for item in probe.after_run()}
        opens = data["openat"]
        assert len(set(opens["process"])) >= 2  # sh and cat, each with its own positions
        for process in set(opens["process"]):
            positions = opens["call_index"][opens["process"] == process]
            assert list(positions) == list(range(1, len(positions) + 1))
        assert (opens["error"] == errno.ENOENT).sum() >= 1
        assert list(probe.directory.iterdir()) == []
        overhead = probe.overhead()
        assert overhead.per_event is not None and overhead.per_event > 0
        assert overhead.per_process is not None and overhead.per_process > 0
    finally:
        executor.close()
        probe.close()
