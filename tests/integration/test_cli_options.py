"""hyperfine's options and where results go, end to end with real processes and a real store."""

from __future__ import annotations

import json
import os
import subprocess
from functools import partial
from pathlib import Path

from tests.cutaway_command import CUTAWAY
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


def test_an_input_that_is_cutaways_own_output_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    """`cutaway run cat --input /dev/stdout` would have each run wait on the pipe cutaway
    itself holds open, for ever: refused at once (exit 2), naming the option, nothing stored.
    The timeout makes a regression a failure, not a hang."""
    for path in ("/dev/stdout", "/proc/self/fd/1", "/dev/stderr", "/dev/fd/2"):
        result = run_cutaway("run", "-c", "cat", "--input", path, *QUICK, cwd=tmp_path, timeout=60)
        assert result.returncode == 2, (path, result.stderr)
        assert result.stderr == (
            f'cutaway: --input: "{path}" is cutaway\'s own standard '
            f"{'output' if path.endswith('1') or path.endswith('out') else 'error'}: a run would "
            "read what cutaway writes there, or wait on it for ever (give a file)\n"
        )
    with open(tmp_path / "report.txt", "w") as report:  # the file standard output goes to
        written = subprocess.run(
            [*CUTAWAY, "run", "-c", "cat", "--input", "report.txt", *QUICK],
            cwd=tmp_path,
            stdout=report,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert written.returncode == 2, written.stderr
    assert "is the file cutaway's own standard output goes to" in written.stderr
    assert not (tmp_path / ".cutaway").exists()


def test_a_terminal_as_input_is_refused(tmp_path: Path) -> None:
    controller, terminal = os.openpty()
    try:
        name = os.ttyname(terminal)
        result = run_cutaway("run", "-c", "cat", "--input", name, *QUICK, cwd=tmp_path, timeout=60)
    finally:
        os.close(terminal)
        os.close(controller)
    assert result.returncode == 2, result.stderr
    assert f'"{name}" is a terminal: each run would wait for what is typed' in result.stderr
    assert not (tmp_path / ".cutaway").exists()


def test_harmless_special_inputs_still_work(tmp_path: Path) -> None:
    """/dev/null, standard input from a file, a process substitution's /dev/fd/N."""
    (tmp_path / "in.txt").write_text("hello\n")
    cutaway("run", "-c", "cat", "--input", "/dev/null", *QUICK, cwd=tmp_path)
    with open(tmp_path / "in.txt") as given:
        result = subprocess.run(
            [*CUTAWAY, "run", "-c", "cat", "--input", "/dev/stdin", "--output", "out", *QUICK],
            cwd=tmp_path,
            stdin=given,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out").read_text() == "hello\n"


def test_an_export_never_replaces_the_commands_input_or_output(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("hello\n")
    for option in ("--input", "--output"):
        result = run_cutaway(
            "run", "-c", "cat", option, "in.txt", "--export-json", "in.txt", *QUICK, cwd=tmp_path
        )
        assert result.returncode == 2, result.stderr
        assert f"--export-json 'in.txt' would replace the {option} file" in result.stderr
    assert (tmp_path / "in.txt").read_text() == "hello\n"
    assert not (tmp_path / ".cutaway").exists()
