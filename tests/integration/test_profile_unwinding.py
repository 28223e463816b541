"""The profile probe on real perf: DWARF insisted on keeps the callers of a sleep through
Debian's glibc (built without frame pointers); two builds of one program under different
names are compared frame by frame in the differential flame graph; the per-sample cost is
always said; a system-wide profile tells this cutaway's processes from another's."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from cutaway import api
from cutaway.probes.profile import records
from tests.cutaway_command import cutaway

pytestmark = pytest.mark.skipif(shutil.which("perf") is None, reason="needs perf (linux-perf)")

PROGRAM = r"""
#include <time.h>
static volatile long sink;
__attribute__((noinline)) void work(long n) { for (long i = 0; i < n; i++) sink += i * i; }
__attribute__((noinline)) void nap(void) {
    struct timespec t = {0, 2000000}; nanosleep(&t, 0); }
int main(void) { for (int k = 0; k < 20; k++) { work(2000000); nap(); } return 0; }
"""


def compile_program(directory: Path, name: str) -> Path:
    source = directory / "nap.c"
    source.write_text(PROGRAM)
    binary = directory / name
    flags = ["-O1", "-fno-omit-frame-pointer"]
    subprocess.run(["cc", *flags, "-o", str(binary), str(source)], check=True)
    return binary


def probe_line(stderr: str) -> str:
    return next(line for line in stderr.splitlines() if "probe profile:" in line)


def stacks(directory: Path, kind: str) -> dict[str, int]:
    data = api.load(db=directory / ".cutaway" / "cutaway.db")
    found: dict[str, int] = {}
    for item in data.store.run_data(data.experiment.id, records.KIND):
        if item.key == kind:
            for stack, weight in records.decode(item.data).stacks.items():
                found[stack] = found.get(stack, 0) + weight
    return found


def test_dwarf_insisted_on_keeps_the_callers_of_a_sleep_through_glibc(tmp_path: Path) -> None:
    binary = compile_program(tmp_path, "nap")
    result = cutaway(
        "run", "-c", str(binary), "--rounds", "1", "--warmup", "0",
        "--profile-call-graph", "dwarf!", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    line = probe_line(result.stderr)
    assert "DWARF" in line and "frame pointers" not in line, line
    assert "per-sample cost" in line  # how it was measured, or its bound
    asleep = [s for s in stacks(tmp_path, "off-cpu") if "nanosleep" in s]
    # Frame pointers lose nap (glibc's nanosleep keeps none): main;clock_nanosleep.
    assert any(";main;nap;" in stack for stack in asleep), asleep


def test_a_renamed_build_is_compared_frame_by_frame(tmp_path: Path) -> None:
    first, second = compile_program(tmp_path, "prog-v1"), compile_program(tmp_path, "prog-v2")
    result = cutaway(
        "run", "-c", str(first), "-n", "v1", "-c", str(second), "-n", "v2",
        "--rounds", "1", "--warmup", "0", "--profile", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "per-sample cost" in probe_line(result.stderr)
    output = tmp_path / "diff.svg"
    exported = cutaway(
        "export", "--format", "flamegraph-diff", "--variant", "v2", "-o", str(output),
        cwd=tmp_path,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    document = output.read_text()
    assert '"prog-v1 -\\u003e prog-v2"' in document
    assert '"prog-v1"' not in document and '"prog-v2"' not in document


@pytest.mark.skipif(os.geteuid() != 0, reason="a system-wide profile needs root here")
def test_a_system_wide_profile_tells_this_cutaway_from_another(tmp_path: Path) -> None:
    # Another experiment's cutaway on the machine, busy the whole time.
    other = tmp_path / "cutaway"
    other.write_text("#!/bin/sh\nwhile :; do :; done\n")
    other.chmod(0o755)
    busy = subprocess.Popen([str(other)])
    try:
        time.sleep(0.2)
        binary = compile_program(tmp_path, "nap")
        result = cutaway(
            "run", "-c", str(binary), "--rounds", "1", "--warmup", "0", "--profile", "-a",
            "--no-off-cpu", cwd=tmp_path,
        )  # fmt: skip
    finally:
        busy.kill()
        busy.wait()
    assert result.returncode == 0, result.stderr
    by_process: dict[str, int] = {}
    for stack, weight in stacks(tmp_path, "on-cpu").items():
        process = stack.split(";", 1)[0]
        by_process[process] = by_process.get(process, 0) + weight
    # The busy loop took a core for the whole run: all of it is someone else's.
    assert by_process.get("cutaway(other)", 0) > 0.5 * by_process.get("nap", 1), by_process
    assert by_process.get("cutaway", 0) < by_process["cutaway(other)"], by_process
