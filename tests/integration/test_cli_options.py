"""hyperfine's options and where results go, end to end with real processes and a real store."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from tests.cutaway_command import cutaway as run_cutaway

# A command that fails fails the test, with its output.
cutaway = partial(run_cutaway, check=True)


QUICK = ("--rounds", "2", "--warmup", "0")


def test_run_ends_by_saying_where_the_result_is(tmp_path: Path) -> None:
    result = cutaway("run", "-c", "true", *QUICK, cwd=tmp_path)
    last = result.stderr.splitlines()[-1]
    assert last == "cutaway: stored as #1 in .cutaway/cutaway.db: cutaway report 1"
    assert cutaway("report", "1", cwd=tmp_path).stdout  # the hint works


def test_cutaway_db_moves_the_store_and_the_hint_names_it(tmp_path: Path) -> None:
    env = {"CUTAWAY_DB": "runs.db"}
    result = cutaway("run", "-c", "true", *QUICK, cwd=tmp_path, env=env)
    assert (tmp_path / "runs.db").exists()
    assert not (tmp_path / ".cutaway").exists()
    assert result.stderr.splitlines()[-1] == (
        "cutaway: stored as #1 in runs.db: cutaway report 1 --db runs.db"
    )
    assert "#1" in cutaway("list", cwd=tmp_path, env=env).stdout
    default = cutaway("list", cwd=tmp_path, check=False)  # the default store was never made
    assert default.returncode == 1 and "no store at .cutaway/cutaway.db" in default.stderr
    second = cutaway("run", "-c", "true", *QUICK, "--db", "other.db", cwd=tmp_path, env=env)
    assert second.stderr.splitlines()[-1].endswith("cutaway report 1 --db other.db")


def test_quiet_prints_only_the_report(tmp_path: Path) -> None:
    result = cutaway("run", "-c", "true", "-c", "sleep 0", *QUICK, "-q", cwd=tmp_path)
    assert result.stderr == ""
    assert "wall" in result.stdout


def test_style_none_prints_no_progress(tmp_path: Path) -> None:
    result = cutaway("run", "-c", "true", *QUICK, "--style", "none", cwd=tmp_path)
    assert result.stderr.splitlines() == [
        "cutaway: stored as #1 in .cutaway/cutaway.db: cutaway report 1"
    ]
    assert "\x1b[" not in result.stdout
    basic = cutaway("run", "-c", "true", *QUICK, "--style", "basic", cwd=tmp_path)
    assert "running experiment #2" in basic.stderr
    colored = cutaway("run", "-c", "true", *QUICK, "--style", "color", cwd=tmp_path)
    assert "\x1b[" in colored.stdout


def test_hooks_once_and_per_variant_run_in_their_places(tmp_path: Path) -> None:
    log = tmp_path / "log"
    cutaway(
        "run",
        *("-c", "true", "-c", "true", "-n", "a", "-n", "b"),
        *("--setup", f"echo setup >> {log}"),
        *("--prepare", f"echo prepare-a >> {log}", "--prepare", f"echo prepare-b >> {log}"),
        *QUICK,
        cwd=tmp_path,
    )
    lines = log.read_text().split()
    assert lines.count("setup") == 2
    assert lines.count("prepare-a") == lines.count("prepare-b") == 2


def test_parameter_scan_end_to_end(tmp_path: Path) -> None:
    cutaway(
        "run",
        *("-c", "sh -c 'test {N} -le 3'", "-P", "N", "1", "3", "--all-pairs"),
        *("--export-json", "r.json"),
        *QUICK,
        cwd=tmp_path,
    )
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["run_counts"] == {f"N={n}": {"ok": 2} for n in (1, 2, 3)}


def test_input_and_output_reach_the_command(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("hello\n")
    cutaway("run", "-c", "cat", "--input", "in.txt", "--output", "out.txt", *QUICK, cwd=tmp_path)
    assert (tmp_path / "out.txt").read_text().startswith("hello")
