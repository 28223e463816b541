"""The profile probe end to end: real perf on a small C program compiled here, profiled runs
separate from the timed runs in the store, and the clear refusals before anything runs."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from cutaway import api
from cutaway.probes.profile import records
from cutaway.probes.profile.capture import has_symbol_table
from tests.cutaway_command import cutaway

pytestmark = pytest.mark.skipif(shutil.which("perf") is None, reason="needs perf (linux-perf)")

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((noinline)) double heavy_work(long n) {
    double s = 0; for (long i = 0; i < n; i++) s += i * 0.5 / (i + 1); return s; }
__attribute__((noinline)) double light_work(long n) {
    double s = 0; for (long i = 0; i < n; i++) s += i * 0.25 / (i + 3); return s; }
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    printf("%f\n", heavy_work(5 * n) + light_work(n));
    usleep(30000);  /* off the CPU: 30 ms asleep */
    return 0; }
"""


def compile_program(directory: Path, *, strip: bool = False) -> Path:
    source = directory / "two.c"
    source.write_text(PROGRAM)
    binary = directory / ("two-stripped" if strip else "two")
    flags = ["-O1", "-fno-omit-frame-pointer", *(["-s"] if strip else [])]
    subprocess.run(["cc", *flags, "-o", str(binary), str(source)], check=True)
    return binary


def test_profiled_runs_name_the_function_doing_more_work(tmp_path: Path) -> None:
    binary = compile_program(tmp_path)
    result = cutaway(
        "run", "-c", f"{binary} 1000000", "-n", "small", "-c", f"{binary} 2000000", "-n", "big",
        "--rounds", "2", "--warmup", "1", "--profile", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "probe profile: perf cpu-clock at 999 Hz, on-CPU and off-CPU" in result.stderr
    database = tmp_path / ".cutaway" / "cutaway.db"
    with sqlite3.connect(database) as raw:
        purposes = raw.execute(
            "SELECT purpose, round_index, COUNT(*) FROM runs GROUP BY purpose, round_index"
        ).fetchall()
    raw.close()
    # Warmup: timed runs only; each counted round: 2 timed and 2 profiled runs.
    assert sorted(purposes) == [
        ("profile", 0, 2), ("profile", 1, 2), ("timed", -1, 2), ("timed", 0, 2), ("timed", 1, 2)
    ]  # fmt: skip
    data = api.load(db=database)
    assert len(data.runs) == 4  # the analysis sees the timed runs only
    stored = data.store.run_data(data.experiment.id, records.KIND)
    assert {(s.variant, s.round_index, s.key) for s in stored} == {
        (v, r, k) for v in ("small", "big") for r in (0, 1) for k in ("on-cpu", "off-cpu")
    }
    for item in stored:
        profile = records.decode(item.data)
        if item.key == "on-cpu":
            top = max(profile.stacks, key=lambda stack: profile.stacks[stack])
            assert top.split(";")[-1] == "heavy_work", top
        else:
            asleep = sum(w for s, w in profile.stacks.items() if "nanosleep" in s)
            assert asleep >= 0.025e9  # the 30 ms usleep, seen off the CPU
    (probe,) = data.store.probes(data.experiment.id)
    assert probe.process_overhead_seconds is not None
    # The per-sample cost: a number, or (not resolved on a busy machine) its bound.
    assert (probe.overhead_seconds or 0) > 0 or "per-sample cost below" in probe.description


def test_perf_missing_is_refused_before_anything_runs(tmp_path: Path) -> None:
    bin_directory = tmp_path / "bin"
    bin_directory.mkdir()
    for tool in ("true", "sh"):
        os.symlink(shutil.which(tool) or "", bin_directory / tool)
    result = cutaway(
        "run", "-c", "true", "--profile", cwd=tmp_path, env={"PATH": str(bin_directory)}
    )
    assert result.returncode == 2
    assert "needs perf, which is not on PATH" in result.stderr
    assert "linux-perf" in result.stderr
    assert not (tmp_path / ".cutaway" / "cutaway.db").exists() or "stored as" not in result.stderr


def test_a_binary_without_symbols_is_named_before_the_first_run(tmp_path: Path) -> None:
    stripped = compile_program(tmp_path, strip=True)
    assert has_symbol_table(str(stripped)) is False
    assert has_symbol_table(str(compile_program(tmp_path))) is True
    result = cutaway(
        "run", "-c", f"{stripped} 200000", "--rounds", "1", "--warmup", "0", "--profile",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    warning = result.stderr.index("has no symbol table (stripped)")
    assert warning < result.stderr.index("harness overhead")  # before the first run


def test_phase_rules_give_a_dissection_table_from_samples_alone(tmp_path: Path) -> None:
    binary = compile_program(tmp_path)
    experiment = tmp_path / "phases.toml"
    experiment.write_text(
        'name = "phases"\nrounds = 2\nwarmup_rounds = 0\nbaseline = "small"\n'
        f'[[variants]]\nname = "small"\ncommand = "{binary} 1000000"\n'
        f'[[variants]]\nname = "big"\ncommand = "{binary} 2000000"\n'
        '[probes.profile]\nphases = [\n  { name = "heavy", frames = "^heavy_work$" },\n'
        '  { name = "light", frames = "^light_work$" },\n]\n'
    )
    result = cutaway("run", str(experiment), "--export-json", "out.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "phases from samples" in result.stdout and "big vs small" in result.stdout
    document = json.loads((tmp_path / "out.json").read_text())
    phases = {(p["variant"], p["kind"], p["phase"]): p for p in document["profile_phases"]}
    for variant in ("small", "big"):
        heavy, light = phases[(variant, "on-cpu", "heavy")], phases[(variant, "on-cpu", "light")]
        assert heavy["unit"] == "seconds" and heavy["per_run"] > 2 * light["per_run"] > 0
        shares = [p["share"] for (v, k, _), p in phases.items() if (v, k) == (variant, "on-cpu")]
        assert abs(sum(shares) - 1.0) < 1e-9
        asleep = phases[(variant, "off-cpu", "other")]["per_run"]
        assert asleep >= 0.025  # the 30 ms usleep: no rule names it
    assert (
        phases[("big", "on-cpu", "heavy")]["per_run"]
        > phases[("small", "on-cpu", "heavy")]["per_run"]
    )
