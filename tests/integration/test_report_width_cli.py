"""The terminal report's width from the command line, end to end: `--width N` on every command
that prints one, else COLUMNS, in a pipe or a file as on a terminal; a four-variant table of
medians at 100 columns is split into tables that fit, at 220 it is one."""

from __future__ import annotations

import os
import subprocess
from functools import partial
from pathlib import Path

import pytest

from tests.cutaway_command import CUTAWAY
from tests.cutaway_command import cutaway as run_cutaway

# A command that fails fails the test, with its output.
cutaway = partial(run_cutaway, check=True)
# Names long enough that four side by side (134 columns) never fit in 100, whatever the values.
NAMES = tuple(f"{n}-variant-with-a-long-name" for n in ("first", "second", "third", "fourth"))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("width")
    commands = [word for name in NAMES for word in ("-c", "true", "-n", name)]
    cutaway("run", *commands, "--rounds", "2", "--warmup", "0", "-q", cwd=directory)
    return directory


def _median_headers(text: str) -> list[list[str]]:
    return [line.split()[1:] for line in text.splitlines() if line.startswith("median ")]


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_a_pipe_is_100_columns_wide_and_the_medians_are_split_to_fit(store: Path) -> None:
    text = cutaway("report", cwd=store).stdout
    assert _widest(text) <= 100
    headers = _median_headers(text)
    assert len(headers) == 2 and [n for h in headers for n in h] == list(NAMES)


def test_columns_is_the_width_of_a_report_in_a_file(store: Path) -> None:
    saved = store / "report.txt"
    with saved.open("w") as file:
        subprocess.run(
            [*CUTAWAY, "report"],
            cwd=store,
            stdout=file,
            check=True,
            timeout=120,
            env={**os.environ, "COLUMNS": "220", "NO_COLOR": "1"},
        )
    text = saved.read_text()
    assert _median_headers(text) == [list(NAMES)]  # one table, every variant side by side
    assert 100 < _widest(text) <= 220


def test_width_wins_over_columns_on_report_compare_and_run(store: Path) -> None:
    wide = {"COLUMNS": "220"}
    for command in (["report"], ["compare", "1", "1"]):
        text = cutaway(*command, "--width", "100", cwd=store, env=wide).stdout
        assert _widest(text) <= 100 and len(_median_headers(text)) == 2, command
    commands = [word for name in NAMES for word in ("-c", "true", "-n", name)]
    run = cutaway("run", *commands, "--rounds", "2", "--warmup", "0", "-q", "--width", "220",
                  cwd=store)  # fmt: skip
    assert _median_headers(run.stdout) == [list(NAMES)]


@pytest.mark.parametrize("width", ["10", "wide", "-5", "1001"])
def test_a_width_that_is_no_width_is_a_usage_error(store: Path, width: str) -> None:
    result = cutaway("report", "--width", width, cwd=store, check=False)
    assert result.returncode == 2
    assert "--width" in result.stderr and "at least 40 and at most 1000" in result.stderr
    assert result.stdout == ""
