"""A disk that fills while an experiment runs: cutaway says which write
failed, what was kept and how to resume; the experiment is left incomplete, not running, and
its lease released; every cleanup runs; and once there is room `--resume` finishes it. The disk
is a real tmpfs that the measured command itself fills."""

from __future__ import annotations

import sqlite3
import textwrap
from pathlib import Path

import pytest
from filesystems import Tmpfs

from tests.cutaway_command import cutaway

ROUNDS = 30


def filling_experiment(tmp_path: Path, disk: Path) -> Path:
    """Variant "filler" fills the disk in its fourth run (a count kept off that disk)."""
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


@pytest.mark.parametrize("quiet", [False, True])
def test_a_full_disk_stops_the_experiment_cleanly_and_resume_finishes_it(
    tmp_path: Path, tmpfs: Tmpfs, quiet: bool
) -> None:
    disk = tmpfs.mount("8m")
    db = disk / "cutaway.db"
    experiment = filling_experiment(tmp_path, disk)

    result = cutaway("run", str(experiment), "--db", str(db), *(["-q"] * quiet), cwd=tmp_path)

    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    # Which write failed, and why.
    assert f"cannot store run 'filler' round 3 of experiment 1 in {db}" in result.stderr
    assert "no space left" in result.stderr
    # What was kept, and how to go on.
    status, owner, runs = stored(db)
    assert (status, owner) == ("incomplete", None)  # not "running"; the lease is released
    assert 6 <= runs < 2 * ROUNDS
    assert f"{runs} runs in {runs // 2} complete rounds are stored" in result.stderr
    assert f"`cutaway run --resume 1 --db {db}`" in result.stderr
    log = (tmp_path / "hooks.log").read_text().split()
    assert sorted(log[2:]) == ["cleanup-filler", "cleanup-other"]  # every cleanup ran

    (disk / "filler").unlink()
    resumed = cutaway("run", "--resume", "1", "--db", str(db), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert stored(db) == ("complete", None, 2 * ROUNDS)
