"""A store whose disk fills while an experiment runs: the failed write is
named, the experiment is recorded as incomplete with its lease released, thanks to the space
held since it started (store/reserve.py); and if even that cannot be recorded, the error that
stopped the experiment is still the one raised. Real processes fill a real tmpfs."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from filesystems import Tmpfs, fill_filesystem
from stores import raw_execute

from cutaway import events
from cutaway.model import Hooks, Spec, Variant
from cutaway.runner.runner import run_experiment
from cutaway.store import Store, StoreFull
from cutaway.store.reserve import RESERVE_BYTES, SpaceReserve


def free_bytes(directory: Path) -> int:
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize


def test_a_reserve_holds_space_without_a_name_and_gives_it_back(tmpfs: Tmpfs) -> None:
    disk = tmpfs.mount("4m")
    before = free_bytes(disk)
    reserve = SpaceReserve(disk)
    assert reserve.take() and reserve.held
    assert free_bytes(disk) <= before - RESERVE_BYTES
    assert os.listdir(disk) == []  # nothing to leave behind, whatever happens to us
    assert reserve.release() and not reserve.held
    assert free_bytes(disk) == before
    assert not reserve.release()


def test_a_full_disk_has_no_reserve_to_give(tmpfs: Tmpfs) -> None:
    disk = tmpfs.mount("1m")
    fill_filesystem(disk)
    assert not SpaceReserve(disk).take()


def filling_spec(disk: Path, counter: Path, in_blocks: bool = False) -> Spec:
    """Variant "filler" fills the disk on its third run. Its runs are made one at a time (a
    prepare hook runs between two runs), unless ``in_blocks``."""
    fill = (
        f"n=$(($(cat {counter} 2>/dev/null || echo 0) + 1)); echo $n > {counter}; "
        f"if [ $n -eq 3 ]; then cat /dev/zero > {disk}/filler 2>/dev/null; fi; true"
    )
    return Spec(
        name="disk full",
        variants=(
            Variant(
                name="filler",
                command=("sh", "-c", fill),
                hooks=Hooks(prepare=None if in_blocks else "true"),
            ),
            Variant(name="other", command=("true",)),
        ),
        baseline="filler",
        rounds=20,
        warmup_rounds=0,
    )


def run_until_full(
    tmp_path: Path, disk: Path, in_blocks: bool = False
) -> tuple[StoreFull, list[events.Event], tuple[object, ...]]:
    seen: list[events.Event] = []
    db = disk / "cutaway.db"
    with Store(db) as store, pytest.raises(StoreFull) as caught:
        run_experiment(
            filling_spec(disk, tmp_path / "count", in_blocks),
            store,
            environment={},
            listeners=[seen.append],
        )
    (disk / "filler").unlink()  # room again, to read what was stored
    with Store(db) as store:
        stored = store.experiment(1)
        (row,) = store.list_experiments()
        ((owner,),) = raw_execute(store, "SELECT owner_pid FROM experiments")
    return caught.value, seen, (stored.status, row.n_runs, owner)


def test_the_experiment_is_recorded_as_stopped_and_its_lease_released(
    tmp_path: Path, tmpfs: Tmpfs
) -> None:
    disk = tmpfs.mount("4m")
    error, seen, (status, runs, owner) = run_until_full(tmp_path, disk)
    assert str(error).startswith(f"cannot store run 'filler' round 2 of experiment 1 in {disk}")
    assert "no space left on its disk" in str(error)
    assert (status, owner) == ("incomplete", None)
    finished = seen[-1]
    assert isinstance(finished, events.ExperimentFinished)
    assert (finished.status, finished.reason) == ("incomplete", "error")
    assert finished.runs_kept == runs and finished.rounds_kept == runs // 2
    assert 4 <= runs <= 5


def test_a_block_whose_runs_cannot_be_stored_is_named_by_its_first_run(
    tmp_path: Path, tmpfs: Tmpfs
) -> None:
    # A block's runs are stored once it has ended (about 0.1 s of runs): the disk filled during
    # the block, so none of its runs fits, and the error names the block's first (round 0,
    # unless the machine was so slow that an earlier block ended before the disk filled).
    disk = tmpfs.mount("4m")
    error, seen, (status, runs, owner) = run_until_full(tmp_path, disk, in_blocks=True)
    assert re.match(
        rf"cannot store run '(filler|other)' round [0-2] of experiment 1 in {disk}", str(error)
    )
    assert "no space left on its disk" in str(error)
    assert (status, owner) == ("incomplete", None)
    finished = seen[-1]
    assert isinstance(finished, events.ExperimentFinished)
    assert (finished.status, finished.reason) == ("incomplete", "error")
    assert finished.runs_kept == runs <= 4


def test_without_room_to_record_it_the_stopping_error_is_still_the_one_raised(
    tmp_path: Path, tmpfs: Tmpfs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seam: no reserve could be taken (as on a disk already nearly full)."""
    monkeypatch.setattr(SpaceReserve, "take", lambda self: False)
    disk = tmpfs.mount("4m")
    error, seen, (status, _, owner) = run_until_full(tmp_path, disk)
    assert str(error).startswith("cannot store run 'filler' round 2")  # not "cannot finish"
    assert status == "running" and owner == os.getpid()
    notices = [event.message for event in seen if isinstance(event, events.Notice)]
    assert any(message.startswith("could not record that the experiment") for message in notices)
    finished = seen[-1]
    assert isinstance(finished, events.ExperimentFinished) and finished.status == "running"
