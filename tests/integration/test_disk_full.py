"""A disk that fills while an experiment runs: cutaway says which write
failed, what was kept and how to resume; the experiment is left incomplete, not running, and
its lease released; every cleanup runs; and once there is room `--resume` finishes it. The disk
is a real tmpfs that the measured command itself fills."""

from __future__ import annotations

import re
import sqlite3
import textwrap
from pathlib import Path

import pytest
from filesystems import Tmpfs

from tests.cutaway_command import cutaway

ROUNDS = 30


def filling_experiment(tmp_path: Path, disk: Path, in_blocks: bool) -> Path:
    """Variant "filler" fills the disk in its fourth run (a count kept off that disk). Its
    runs are made one at a time (a prepare hook runs between two runs), unless
    ``in_blocks``."""
    fill = (
        f"n=$(($(cat {tmp_path}/count 2>/dev/null || echo 0) + 1)); echo $n > {tmp_path}/count; "
        f"if [ $n -eq 4 ]; then cat /dev/zero > {disk}/filler 2>/dev/null; fi; true"
    )
    path = tmp_path / "experiment.toml"
    path.write_text(
        textwrap.dedent(f"""\
        name = "disk full"
        rounds = {ROUNDS}
        warmup_rounds = 0

        [[variants]]
        name = "filler"
        command = ["sh", "-c", "{fill}"]
        {"" if in_blocks else 'prepare = "true"'}
        setup = "echo setup-filler >> {tmp_path}/hooks.log"
        cleanup = "echo cleanup-filler >> {tmp_path}/hooks.log"

        [[variants]]
        name = "other"
        command = "true"
        setup = "echo setup-other >> {tmp_path}/hooks.log"
        cleanup = "echo cleanup-other >> {tmp_path}/hooks.log"
        """)
    )
    return path


def stored(db: Path) -> tuple[str, object, int]:
    with sqlite3.connect(db) as connection:
        status, owner = connection.execute(
            "SELECT status, owner_pid FROM experiments WHERE id = 1"
        ).fetchone()
        (runs,) = connection.execute("SELECT COUNT(*) FROM runs").fetchone()
        (integrity,) = connection.execute("PRAGMA integrity_check").fetchone()
    assert integrity == "ok"
    return status, owner, runs


@pytest.mark.parametrize(("quiet", "in_blocks"), [(False, False), (True, False), (False, True)])
def test_a_full_disk_stops_the_experiment_cleanly_and_resume_finishes_it(
    tmp_path: Path, tmpfs: Tmpfs, quiet: bool, in_blocks: bool
) -> None:
    disk = tmpfs.mount("8m")
    db = disk / "cutaway.db"
    experiment = filling_experiment(tmp_path, disk, in_blocks)

    result = cutaway("run", str(experiment), "--db", str(db), *(["-q"] * quiet), cwd=tmp_path)

    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    # Which write failed, and why. A block's runs are stored once it has ended (about 0.1 s
    # of runs): the disk filled during the block, so the first run that does not fit is the
    # block's first (round 0, unless an earlier block ended before the disk filled).
    failed = "'filler' round 3" if not in_blocks else "'(filler|other)' round [0-3]"
    assert re.search(f"cannot store run {failed} of experiment 1 in {db}", result.stderr)
    assert "no space left" in result.stderr
    # What was kept, and how to go on.
    status, owner, runs = stored(db)
    assert (status, owner) == ("incomplete", None)  # not "running"; the lease is released
    assert (6 <= runs < 2 * ROUNDS) if not in_blocks else (runs <= 7)
    if runs:
        assert f"{runs} runs in {runs // 2} complete rounds are stored" in result.stderr
    else:
        assert "experiment #1 measured nothing (stopped by the error below)" in result.stderr
    assert f"`cutaway run --resume 1 --db {db}`" in result.stderr
    log = (tmp_path / "hooks.log").read_text().split()
    assert sorted(log[2:]) == ["cleanup-filler", "cleanup-other"]  # every cleanup ran

    (disk / "filler").unlink()
    resumed = cutaway("run", "--resume", "1", "--db", str(db), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert stored(db) == ("complete", None, 2 * ROUNDS)
