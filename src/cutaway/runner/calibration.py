"""The harness's own cost: the wall time of `true` run exactly the way variants are run,
measured before the first run, and reused while the machine is unchanged.

How it is measured: WARMUP_SPAWNS spawns of `true` through the fork server, not counted (the
first ones pay for cold caches), then CALIBRATION_RUNS counted ones, one after the other in a
block as a plain variant's runs are made; the figure is their median (and the smallest, kept
too). Nothing else of cutaway runs meanwhile: no import, no
store write. A median of 30 runs made while the analysis was imported in a thread ranged from
0.6 to 6.7 ms over 32 experiments on a busy 2-core machine where `true` itself measured 0.8 to
0.9 ms: a burst of load of 15 ms was enough to move it.

Why reused: measuring costs about 0.1 s, a good part of a short session, and the figure only
changes with the machine. It is kept in a small JSON file (:func:`cache_path`) and reused, and
measured again when any of these differs from when it was measured (the invalidation rule):
the host name, the boot (the kernel's boot id: a reboot), the kernel release, the CPU model,
the number of cores, the CPU frequency governor, cutaway's version and its fork server binary
(path, size, modification time: a rebuild); or when it is older than MAX_AGE_SECONDS. A
missing, unreadable or damaged file is measured again and rewritten; a file that cannot be
written is left alone (the figure is then measured every time). docs/how-it-works.md says the
same for users."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Mapping
from typing import Any

from cutaway import __version__, interrupts
from cutaway.model import Calibration, RunStatus, Variant
from cutaway.probes.base import Measurement
from cutaway.runner.executor import BlockExecutor, BlockInterrupted, Executor
from cutaway.value_class import value_class

CALIBRATION_COMMAND = "true"
CALIBRATION_VARIANT = Variant(name="(calibration)", command=(CALIBRATION_COMMAND,))
WARMUP_SPAWNS = 5
CALIBRATION_RUNS = 100
MAX_AGE_SECONDS = 24 * 3600
CACHE_DIR_VARIABLE = "CUTAWAY_CACHE_DIR"
CACHE_FILE_NAME = "calibration.json"
# The environment's keys (cutaway.environment) whose change makes the figure stale.
MACHINE_KEYS = ("host", "kernel", "cpu_model", "cores", "cpu_governor", "cutaway_version")
_BOOT_ID = "/proc/sys/kernel/random/boot_id"
# 2: measured in a block of runs (without a message to cutaway inside each run), as the runs
# of a plain variant are: a figure of format 1 was measured one run at a time.
_FORMAT = 2
# No block of the calibration ends on time: its runs are all made at once (about 0.1 s).
_BLOCK_SECONDS = 60.0
_MOST_BYTES = 1 << 20  # a cache file is a few hundred bytes


@value_class
class Measured:
    """A calibration and when it was measured (Unix seconds); ``reused`` when it came from
    the cache rather than from runs made now."""

    calibration: Calibration
    measured_at: float
    reused: bool


def measure(executor: Executor) -> Calibration | None:
    """The median wall time of CALIBRATION_RUNS spawns of `true`, after WARMUP_SPAWNS
    uncounted ones; None when none succeeded (a machine where `true` cannot run). Run the way
    a plain variant's runs are: in blocks when the executor makes them (runner.run_blocks),
    else one at a time."""
    spawns = WARMUP_SPAWNS + CALIBRATION_RUNS
    outcomes: list[Measurement] = []
    while len(outcomes) < spawns:
        interrupts.check()
        if isinstance(executor, BlockExecutor):
            left = spawns - len(outcomes)
            try:
                outcomes += executor.measure_block(
                    (CALIBRATION_VARIANT,), (0,) * left, None, _BLOCK_SECONDS
                )
            except BlockInterrupted as stopped:
                raise stopped.interruption from None
        else:
            outcomes.append(executor.measure(CALIBRATION_VARIANT, None))
    walls = sorted(
        measured.metrics["wall"]
        for measured in outcomes[WARMUP_SPAWNS:]
        if measured.status is RunStatus.OK
    )
    if not walls:
        return None
    return Calibration(CALIBRATION_COMMAND, len(walls), walls[len(walls) // 2], walls[0])


def cache_path() -> str:
    """$CUTAWAY_CACHE_DIR/calibration.json, else under $XDG_CACHE_HOME/cutaway, else under
    ~/.cache/cutaway."""
    directory = os.environ.get(CACHE_DIR_VARIABLE)
    if not directory:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        directory = os.path.join(base, "cutaway")
    return os.path.join(directory, CACHE_FILE_NAME)


def machine_key(environment: Mapping[str, object], forkserver: str) -> dict[str, object]:
    """What must be unchanged for a stored figure to be reused (see the module's rule)."""
    key = {name: environment.get(name) for name in MACHINE_KEYS}
    key["cutaway_version"] = __version__
    key["boot_id"] = _read_text(_BOOT_ID)
    try:
        status = os.stat(forkserver)
        key["forkserver"] = [forkserver, status.st_size, status.st_mtime_ns]
    except OSError:
        key["forkserver"] = [forkserver, None, None]
    return key


class CalibrationCache:
    """The figure for one machine key, read from and written to one file."""

    def __init__(self, path: str, key: Mapping[str, object]) -> None:
        self.path = path
        self.key = dict(key)

    def read(self, now: float | None = None) -> Measured | None:
        """The stored figure if it was measured under this key less than MAX_AGE_SECONDS
        ago; None otherwise (also for a file that cannot be read or parsed)."""
        now = time.time() if now is None else now
        try:
            record = _read_record(self.path)
            if record.get("format") != _FORMAT or record.get("key") != self.key:
                return None
            measured_at = float(record["measured_at"])
            stored = record["calibration"]
            calibration = Calibration(
                str(stored["command"]),
                int(stored["n"]),
                float(stored["median_wall_seconds"]),
                float(stored["min_wall_seconds"]),
            )
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
        if not 0 <= now - measured_at < MAX_AGE_SECONDS:
            return None
        if calibration.n < 1 or not calibration.median_wall_seconds > 0:
            return None
        return Measured(calibration, measured_at, reused=True)

    def write(self, calibration: Calibration, measured_at: float) -> None:
        """Store the figure (atomically: a reader sees the old file or the new one); a
        failure is ignored, the figure is then measured again next time."""
        record = {
            "format": _FORMAT,
            "key": self.key,
            "measured_at": measured_at,
            "calibration": {
                "command": calibration.command,
                "n": calibration.n,
                "median_wall_seconds": calibration.median_wall_seconds,
                "min_wall_seconds": calibration.min_wall_seconds,
            },
        }
        if not _replaceable(self.path):
            return
        import tempfile  # once per machine: a reused figure writes nothing

        try:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            directory, name = os.path.split(self.path)
            handle, temporary = tempfile.mkstemp(
                prefix=f".{name}.", suffix=".tmp", dir=directory or "."
            )
        except OSError:
            return
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump(record, file, indent=1)
            os.replace(temporary, self.path)
        except BaseException as error:  # an interrupt too: no temporary file left behind
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            if not isinstance(error, OSError):
                raise


def _read_record(path: str) -> Any:
    """The cache file's JSON. Opened without waiting and read only when it is a regular file of
    a sensible size: a FIFO of that name kept every `cutaway run` waiting for a writer, with
    Ctrl-C held (found by a hostile re-run); anything else raises ValueError."""
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(handle, encoding="utf-8") as file:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode) or status.st_size > _MOST_BYTES:
            raise ValueError(f"{path} is no calibration file")
        return json.load(file)


def _replaceable(path: str) -> bool:
    """Whether the cache file may be replaced: nothing there yet, a file, or a symbolic link
    (the link is replaced, not what it names). A device or a FIFO of that name is left as it is:
    the figure is then measured every time."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


def calibrate(executor: Executor, cache: CalibrationCache | None) -> Measured | None:
    """The cached figure when it is still valid, else one measured now (and cached)."""
    if cache is not None:
        reused = cache.read()
        if reused is not None:
            return reused
    calibration = measure(executor)
    if calibration is None:
        return None
    measured_at = time.time()
    if cache is not None:
        cache.write(calibration, measured_at)
    return Measured(calibration, measured_at, reused=False)


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read().strip()
    except OSError:
        return None
