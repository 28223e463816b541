"""The harness's cost: measured from enough spawns of `true`, reused while the machine is
unchanged, measured again when it changes (cutaway.runner.calibration)."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from cutaway.model import RunStatus, Variant
from cutaway.probes.base import Attachment
from cutaway.runner import calibration
from cutaway.runner.calibration import CalibrationCache, calibrate, machine_key
from cutaway.runner.executor import Measurement

ENVIRONMENT = {
    "host": "h",
    "kernel": "6.1",
    "cpu_model": "cpu",
    "cores": 2,
    "cpu_governor": "performance",
}


class CountingExecutor:
    """Spawn number i takes i ms: the first WARMUP_SPAWNS must not count."""

    def __init__(self) -> None:
        self.spawns = 0

    def measure(
        self, variant: Variant, timeout_seconds: float | None, attachment: Attachment | None = None
    ) -> Measurement:
        assert variant.command == ("true",)
        self.spawns += 1
        return Measurement(RunStatus.OK, 0, None, {"wall": self.spawns / 1000})

    def check(self, variant: Variant) -> str | None:
        return None

    def close(self) -> None:
        pass


class BlockCountingExecutor(CountingExecutor):
    """CountingExecutor that makes its runs in blocks of at most 30 (as a block that ended on
    time); one at a time is refused, as the way a plain variant's runs are not made."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[int] = []

    def measure(
        self, variant: Variant, timeout_seconds: float | None, attachment: Attachment | None = None
    ) -> Measurement:
        raise AssertionError("calibrated one run at a time by an executor that makes blocks")

    def can_block(self, variant: Variant) -> bool:
        return True

    def measure_block(
        self,
        variants: Sequence[Variant],
        order: Sequence[int],
        timeout_seconds: float | None,
        seconds: float,
    ) -> list[Measurement]:
        made = [super(BlockCountingExecutor, self).measure(variants[i], None) for i in order[:30]]
        self.blocks.append(len(made))
        return made


@pytest.fixture
def forkserver(tmp_path: Path) -> str:
    path = tmp_path / "cw_forkserver"
    path.write_bytes(b"binary")
    return str(path)


def cache(tmp_path: Path, forkserver: str, **changed: object) -> CalibrationCache:
    key = machine_key({**ENVIRONMENT, **changed}, forkserver)
    return CalibrationCache(str(tmp_path / "cache" / "calibration.json"), key)


def test_the_figure_is_the_median_of_the_counted_spawns_after_the_uncounted_ones() -> None:
    executor = CountingExecutor()
    measured = calibration.measure(executor)
    assert measured is not None
    total = calibration.WARMUP_SPAWNS + calibration.CALIBRATION_RUNS
    assert executor.spawns == total
    assert measured.n == calibration.CALIBRATION_RUNS
    assert measured.min_wall_seconds == (calibration.WARMUP_SPAWNS + 1) / 1000
    middle = calibration.WARMUP_SPAWNS + calibration.CALIBRATION_RUNS // 2 + 1
    assert measured.median_wall_seconds == middle / 1000


def test_an_executor_that_makes_blocks_is_calibrated_in_blocks() -> None:
    executor = BlockCountingExecutor()
    measured = calibration.measure(executor)
    total = calibration.WARMUP_SPAWNS + calibration.CALIBRATION_RUNS
    assert executor.blocks == [30, 30, 30, total - 90]  # each block went on where one ended
    assert measured is not None and measured.n == calibration.CALIBRATION_RUNS
    middle = calibration.WARMUP_SPAWNS + calibration.CALIBRATION_RUNS // 2 + 1
    assert measured.median_wall_seconds == middle / 1000


def test_measured_once_then_reused_on_the_same_machine(tmp_path: Path, forkserver: str) -> None:
    executor = CountingExecutor()
    first = calibrate(executor, cache(tmp_path, forkserver))
    spawns = executor.spawns
    again = calibrate(executor, cache(tmp_path, forkserver))
    assert first is not None and again is not None
    assert not first.reused and again.reused
    assert executor.spawns == spawns  # nothing run the second time
    assert again.calibration == first.calibration
    assert again.measured_at == first.measured_at


@pytest.mark.parametrize(
    "change",
    [{"host": "other"}, {"kernel": "6.2"}, {"cpu_model": "x"}, {"cores": 4},
     {"cpu_governor": "powersave"}],
)  # fmt: skip
def test_measured_again_when_the_machine_changes(
    tmp_path: Path, forkserver: str, change: dict[str, object]
) -> None:
    executor = CountingExecutor()
    calibrate(executor, cache(tmp_path, forkserver))
    spawns = executor.spawns
    measured = calibrate(executor, cache(tmp_path, forkserver, **change))
    assert measured is not None and not measured.reused
    assert executor.spawns == 2 * spawns


def test_measured_again_after_a_rebuilt_fork_server(tmp_path: Path, forkserver: str) -> None:
    executor = CountingExecutor()
    calibrate(executor, cache(tmp_path, forkserver))
    Path(forkserver).write_bytes(b"another build")
    measured = calibrate(executor, cache(tmp_path, forkserver))
    assert measured is not None and not measured.reused


def test_measured_again_once_too_old(tmp_path: Path, forkserver: str) -> None:
    stored = cache(tmp_path, forkserver)
    calibrate(CountingExecutor(), stored)
    assert stored.read() is not None
    later = time.time() + calibration.MAX_AGE_SECONDS + 1
    assert stored.read(now=later) is None


@pytest.mark.parametrize("text", ["", "{", "[]", '{"format": 1}', "null"])
def test_a_damaged_cache_is_measured_again_and_rewritten(
    tmp_path: Path, forkserver: str, text: str
) -> None:
    stored = cache(tmp_path, forkserver)
    Path(stored.path).parent.mkdir()
    Path(stored.path).write_text(text)
    measured = calibrate(CountingExecutor(), stored)
    assert measured is not None and not measured.reused
    assert json.loads(Path(stored.path).read_text())["calibration"]["n"] == measured.calibration.n


def test_a_cache_that_cannot_be_written_is_measured_every_time(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the cache's directory should be
    stored = CalibrationCache(str(blocked / "calibration.json"), {"host": "h"})
    executor = CountingExecutor()
    assert calibrate(executor, stored) is not None
    assert calibrate(executor, stored) is not None
    total = calibration.WARMUP_SPAWNS + calibration.CALIBRATION_RUNS
    assert executor.spawns == 2 * total
    assert os.listdir(tmp_path) == ["file"]


def test_the_cache_directory_follows_the_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUTAWAY_CACHE_DIR", str(tmp_path / "mine"))
    assert calibration.cache_path() == str(tmp_path / "mine" / "calibration.json")
    monkeypatch.delenv("CUTAWAY_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert calibration.cache_path() == str(tmp_path / "xdg" / "cutaway" / "calibration.json")


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_cache_that_is_no_file_is_neither_waited_for_nor_replaced(
    tmp_path: Path, forkserver: str, kind: str
) -> None:
    """A FIFO at the cache's path kept every run waiting for a writer (with interrupts held),
    and a device there (a copy of /dev/null) was replaced by a file, as root too (found by a
    hostile re-run): the figure is measured, and the node left as it was."""
    if kind == "device" and os.geteuid() != 0:
        pytest.skip("mknod of a character device needs root")
    stored = cache(tmp_path, forkserver)
    path = Path(stored.path)
    path.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    executor = CountingExecutor()
    assert calibrate(executor, stored) is not None
    assert calibrate(executor, stored) is not None
    assert executor.spawns == 2 * (calibration.WARMUP_SPAWNS + calibration.CALIBRATION_RUNS)
    mode = path.lstat().st_mode
    assert stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISCHR(mode)
    assert os.listdir(path.parent) == [path.name]  # no temporary file either
