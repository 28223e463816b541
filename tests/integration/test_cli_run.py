"""The `cutaway` command end to end, with real processes and a real store."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import textwrap
import time
from functools import partial
from pathlib import Path

import pytest

from tests.cutaway_command import CUTAWAY
from tests.cutaway_command import cutaway as run_cutaway

# A command that fails fails the test, with its output.
cutaway = partial(run_cutaway, check=True)


def report_json(cwd: Path, experiment: str = "latest") -> dict[str, object]:
    out = cutaway("export", experiment, "--format", "json", cwd=cwd).stdout
    data: dict[str, object] = json.loads(out)
    return data


def test_quick_mode_compares_two_commands_and_exports(tmp_path: Path) -> None:
    result = cutaway(
        "run",
        "-c",
        "true",
        "-c",
        "sleep 0.02",
        "-n",
        "true",
        "-n",
        "sleep",
        "--rounds",
        "8",
        "--warmup",
        "1",
        "--export-json",
        "r.json",
        "--export-csv",
        "r.csv",
        "--export-markdown",
        "r.md",
        cwd=tmp_path,
    )
    assert "regressed" in result.stdout
    data = json.loads((tmp_path / "r.json").read_text())
    wall = [c for c in data["comparisons"] if c["metric"] == "wall"]
    assert len(wall) == 1
    assert wall[0]["baseline"] == "true" and wall[0]["variant"] == "sleep"
    assert wall[0]["verdict"] == "regressed" and wall[0]["ci_low"] > 1
    assert "| " in (tmp_path / "r.md").read_text()
    assert (tmp_path / "r.csv").read_text().startswith("experiment_id,")
    assert (tmp_path / ".cutaway" / "cutaway.db").exists()


def test_a_command_that_always_fails_fails_the_experiment(tmp_path: Path) -> None:
    result = cutaway(
        "run", "-c", "true", "-c", "sh -c 'echo boom >&2; exit 3'", "-n", "ok", "-n", "bad",
        "--rounds", "4", cwd=tmp_path, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert "'bad' failed on its warmup run: `sh -c 'echo boom >&2; exit 3'`" in result.stderr
    assert "exit status 3: boom" in result.stderr
    assert "incomplete" in cutaway("list", cwd=tmp_path).stdout


def test_a_program_that_does_not_exist_stops_before_any_run(tmp_path: Path) -> None:
    result = cutaway(
        "run", "-c", "sleep 0.01", "-c", "nosuchcmd --x", "--rounds", "3", cwd=tmp_path, check=False
    )  # fmt: skip
    # Refused as bad input before anything is stored, as hyperfine refuses it:
    # no store, no empty experiment, no --resume to suggest.
    assert result.returncode == 2, result.stderr
    assert "variant 'nosuchcmd --x' cannot run: no program 'nosuchcmd' in PATH" in result.stderr
    assert "nothing was stored" in result.stderr
    assert "--resume" not in result.stderr
    assert "harness overhead" not in result.stderr  # stopped before calibrating
    assert not (tmp_path / ".cutaway").exists()


def test_a_program_a_setup_hook_may_install_is_checked_after_it(tmp_path: Path) -> None:
    """The setup hook may build the program: it is looked for once the hook has run."""
    result = cutaway(
        "run", "-c", "./built", "--setup", "printf '#!/bin/sh\\n' > built; chmod +x built",
        "--rounds", "2", cwd=tmp_path,
    )  # fmt: skip
    assert "complete" in cutaway("list", cwd=tmp_path).stdout, result.stderr


def test_intermittent_failures_are_counted_and_fail_the_exit_status(tmp_path: Path) -> None:
    # Every third run fails: never the first, so the experiment goes on and reports them.
    flaky = (
        "sh -c 'n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count;"
        " [ $((n % 3)) -ne 0 ] || { echo flaky >&2; exit 4; }'"
    )
    result = cutaway(
        "run", "-c", "true", "-c", flaky, "-n", "ok", "-n", "flaky", "--rounds", "8",
        cwd=tmp_path, check=False,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "3 counted run(s) failed" in result.stderr
    data = report_json(tmp_path)
    assert data["run_counts"]["flaky"] == {"ok": 5, "failed": 3}  # type: ignore[index]
    (summary,) = [
        s
        for s in data["summaries"]  # type: ignore[union-attr]
        if s["variant"] == "flaky" and s["metric"] == "wall"
    ]
    assert summary["n"] == 5
    assert any("flaky" in c["message"] for c in data["cautions"])  # type: ignore[union-attr]


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = f"cutaway-timeout-{os.getpid()}"
    command = f"sh -c 'sleep 30 & exec sleep 31' {marker}"
    result = cutaway(
        "run", "-c", command, "--shell", "--rounds", "1", "--warmup", "0", "--timeout", "300ms",
        cwd=tmp_path, check=False,
    )  # fmt: skip
    # A timed-out run is a failed run, never a fast one: the first one stops the experiment.
    assert result.returncode == 1 and "timed out" in result.stderr
    runs = cutaway("export", "--format", "runs-csv", cwd=tmp_path).stdout
    assert ",timeout," in runs
    time.sleep(0.2)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout.strip() == ""


def write_hook_experiment(tmp_path: Path, command: str, rounds: int) -> Path:
    log = tmp_path / "hooks.log"
    path = tmp_path / "experiment.toml"
    path.write_text(
        textwrap.dedent(f"""\
        name = "hooks"
        rounds = {rounds}
        warmup_rounds = 0
        [[variants]]
        name = "a"
        command = "{command}"
        setup = "echo setup >> {log}"
        prepare = "echo prepare >> {log}"
        conclude = "echo conclude >> {log}"
        cleanup = "echo cleanup >> {log}"
        [[variants]]
        name = "b"
        command = "{command}"
        """)
    )
    return path


def test_hooks_run_in_their_places(tmp_path: Path) -> None:
    path = write_hook_experiment(tmp_path, "true", rounds=3)
    cutaway("run", str(path), cwd=tmp_path)
    lines = (tmp_path / "hooks.log").read_text().split()
    assert lines[0] == "setup" and lines[-1] == "cleanup"
    assert lines.count("prepare") == lines.count("conclude") == 3


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_keeps_runs_cleans_up_and_resumes(tmp_path: Path, stop_signal: int) -> None:
    path = write_hook_experiment(tmp_path, "sleep 0.1", rounds=12)
    process = subprocess.Popen(
        [*CUTAWAY, "run", str(path)],
        cwd=tmp_path,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    db = tmp_path / ".cutaway" / "cutaway.db"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until a few runs are stored, then interrupt
        time.sleep(0.1)
        if db.exists():
            with sqlite3.connect(db) as connection:
                try:
                    (count,) = connection.execute("select count(*) from runs").fetchone()
                except sqlite3.OperationalError:
                    continue
            if count >= 4:
                break
    process.send_signal(stop_signal)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + stop_signal, stderr
    assert "--resume" in stderr
    log = (tmp_path / "hooks.log").read_text().split()
    assert log[-1] == "cleanup" and log.count("prepare") == log.count("conclude")
    data = report_json(tmp_path)
    assert data["experiments"][0]["status"] == "incomplete"  # type: ignore[index]

    cutaway("run", "--resume", cwd=tmp_path)
    data = report_json(tmp_path)
    assert data["experiments"][0]["status"] == "complete"  # type: ignore[index]
    counts = data["run_counts"]
    assert counts == {"a": {"ok": 12}, "b": {"ok": 12}}


BAD_FILES = {
    "syntax": ('name = "x"\nrounds = = 3\n', 2, None),
    "unknown key": (
        'name = "x"\nrounds = 3\n[[variants]]\nname = "a"\ncomand = "true"\n',
        5,
        "comand",
    ),
    "wrong type": ('name = "x"\nrounds = "ten"\ncommand = "true"\n', 2, "rounds"),
    "missing command": ('name = "x"\n[[variants]]\nname = "a"\n', 2, "command"),
    "unknown baseline": ('name = "x"\ncommand = "true"\nbaseline = "nope"\n', 3, "baseline"),
    "undefined param": ('name = "x"\ncommand = "echo {n}"\n[matrix]\nm = [1, 2]\n', 2, "command"),
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_bad_experiment_file_names_file_line_and_key(tmp_path: Path, kind: str) -> None:
    text, line, key = BAD_FILES[kind]
    path = tmp_path / "bad.toml"
    path.write_text(text)
    result = cutaway("run", str(path), cwd=tmp_path, check=False)
    assert result.returncode == 2
    assert f"bad.toml:{line}:" in result.stderr
    if key:
        assert key in result.stderr
    assert not (tmp_path / ".cutaway").exists()  # nothing ran, nothing was created


def test_matrix_expands_into_variants(tmp_path: Path) -> None:
    path = tmp_path / "matrix.toml"
    path.write_text(
        textwrap.dedent("""\
        name = "matrix"
        rounds = 2
        warmup_rounds = 0
        command = "sh -c 'test $S = {senders} && test $Q = {queue_dirs}'"
        [matrix]
        senders = [1, 10]
        queue_dirs = [1, 10]
        [[variants]]
        name = "s{senders}-q{queue_dirs}"
        env = { S = "{senders}", Q = "{queue_dirs}" }
        """)
    )
    cutaway("run", str(path), cwd=tmp_path)
    data = report_json(tmp_path)
    assert sorted(data["run_counts"]) == ["s1-q1", "s1-q10", "s10-q1", "s10-q10"]  # type: ignore[arg-type]
    assert all(c == {"ok": 2} for c in data["run_counts"].values())  # type: ignore[union-attr]


def test_two_concurrent_runs_share_one_store(tmp_path: Path) -> None:
    args = [*CUTAWAY, "run", "-c", "true", "-c", "true", "-n", "x", "-n", "y", "--rounds", "40"]
    first = subprocess.Popen(
        args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    second = subprocess.Popen(
        args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert first.wait(timeout=120) == 0, first.stderr.read() if first.stderr else ""
    assert second.wait(timeout=120) == 0, second.stderr.read() if second.stderr else ""
    listing = cutaway("list", cwd=tmp_path).stdout
    assert listing.count("complete") == 2
    for experiment in ("1", "2"):
        assert report_json(tmp_path, experiment)["run_counts"] == {"x": {"ok": 40}, "y": {"ok": 40}}


def test_compare_two_stored_experiments_lists_environment(tmp_path: Path) -> None:
    for label in ("v1", "v2"):
        cutaway("run", "-c", "true", "-n", "t", "--rounds", "5", "--label", label, cwd=tmp_path)
    result = cutaway("compare", "1", "2", "--export-json", "c.json", cwd=tmp_path)
    assert "t (#1 v1)" in result.stdout
    data = json.loads((tmp_path / "c.json").read_text())
    assert any(c["metric"] == "wall" for c in data["comparisons"])
    assert any(c["kind"] == "unpaired" for c in data["cautions"])


def test_the_harness_figure_is_measured_once_and_reused(tmp_path: Path) -> None:
    """The second experiment on an unchanged machine reuses the first one's harness figure
    (cutaway.runner.calibration): no calibration runs, the same figure stored, said so."""
    environment = {**os.environ, "NO_COLOR": "1", "CUTAWAY_CACHE_DIR": str(tmp_path / "cache")}

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CUTAWAY, "run", "-c", "true", "--rounds", "2"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, env=environment,
            check=True,
        )  # fmt: skip

    first, second = run(), run()
    assert "(median of 100 runs of `true`)" in first.stderr
    assert "on this machine and reused)" in second.stderr
    assert (tmp_path / "cache" / "calibration.json").exists()
    figures = [report_json(tmp_path, str(number))["calibration"] for number in (1, 2)]
    assert figures[0] == figures[1]
