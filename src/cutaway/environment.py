"""The environment fingerprint stored with every experiment.

Capturing is an explicit call (value objects never read the machine). The keys listed in
``COMPARABLE_KEYS`` must match before two experiments measured apart are compared without a
warning, as pyperf does with its metadata."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path

from cutaway import __version__
from cutaway.cpu_steal import cpu_ticks

GIT_TIMEOUT_SECONDS = 5.0
# Keys whose difference makes a comparison of two stored experiments doubtful.
COMPARABLE_KEYS = ("host", "kernel", "cpu_model", "cores", "python", "cutaway_version")
# What `cutaway history` compares between consecutive points: what changes the speed of the same
# program on the same input. The kernel (scheduler, system calls, mitigations), the OS string
# (it names the C library: getpwnam or malloc change with it), the CPU model and cores, the
# frequency governor (powersave against performance is tens of percent), and what measures:
# cutaway itself and the Python that runs it (spawning and timing). Not the host name: a CI
# service's runners get a new name per job, which would mark every point; a new machine of
# the same model, cores, kernel and governor is not told apart.
MACHINE_KEYS = ("kernel", "os", "cpu_model", "cores", "cpu_governor", "python", "cutaway_version")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _start_git_commit(directory: str) -> subprocess.Popen[str] | None:
    """``git rev-parse HEAD`` in ``directory``, started (its answer: :func:`_git_commit`)."""
    try:
        return subprocess.Popen(
            ["git", "-C", directory, "rev-parse", "HEAD"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def _git_commit(started: subprocess.Popen[str] | None) -> str | None:
    """The commit the started ``git rev-parse HEAD`` printed, None when it failed or took over
    GIT_TIMEOUT_SECONDS."""
    if started is None:
        return None
    try:
        output, _ = started.communicate(timeout=GIT_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        started.kill()
        started.communicate()
        return None
    commit = output.strip()
    return commit if started.returncode == 0 and commit else None


class GitCommit:
    """``git rev-parse HEAD`` in ``directory``, started at once and read when asked
    (:meth:`read`): a command starts it before work that does not need it (`cutaway run`
    before importing the runner), so that its answer is there when the fingerprint is taken.
    :meth:`read` waits for it, on every path: no child is left behind."""

    def __init__(self, directory: str) -> None:
        self._started = _start_git_commit(directory)
        self._commit: str | None = None
        self._read = False

    def read(self) -> str | None:
        """The commit git printed, None when it failed (the same on every call)."""
        if not self._read:
            self._read = True
            self._commit = _git_commit(self._started)
        return self._commit


def _cpu_governor() -> str | None:
    path = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    try:
        return path.read_text().strip()
    except OSError:
        return None


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    return [round(value, 2) for value in os.getloadavg()]


def capture_environment(
    directory: str | None = None, git: GitCommit | None = None
) -> dict[str, object]:
    """Fingerprint the machine and the working directory at the start of an experiment;
    ``git``: the directory's commit, started earlier (else it is started now)."""
    directory = directory or os.getcwd()
    # git runs while the rest is read (platform spawns `uname -p`): one wait, not two.
    git = git or GitCommit(directory)
    try:
        fingerprint: dict[str, object] = {
            "host": socket.gethostname(),
            "kernel": platform.release(),
            "os": platform.platform(),
            "cpu_model": _cpu_model(),
            "cores": os.cpu_count(),
            "cpu_governor": _cpu_governor(),
            "python": platform.python_version(),
            "cutaway_version": __version__,
            "loadavg_start": load_average(),
            "cpu_ticks_start": cpu_ticks(),
            "cwd": directory,
            "git_commit": None,
            "argv": list(sys.argv),
            "captured_at": time.time(),
        }
    finally:
        commit = git.read()  # waited for on every path: no child is left behind
    fingerprint["git_commit"] = commit
    return fingerprint


def capture_end() -> dict[str, object]:
    """What is read again when an experiment stops: how busy the machine was by then, and how
    much CPU time a hypervisor took meanwhile."""
    return {
        "loadavg_end": load_average(),
        "cpu_ticks_end": cpu_ticks(),
        "captured_at": time.time(),
    }


def differences(first: dict[str, object], second: dict[str, object]) -> list[str]:
    """Human-readable differences between two fingerprints, on the keys that matter."""
    return [
        f"{key}: {first.get(key)!r} vs {second.get(key)!r}"
        for key in COMPARABLE_KEYS
        if first.get(key) != second.get(key)
    ]
