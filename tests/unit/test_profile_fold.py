"""Folding perf script output: identical to inferno-collapse-perf on recorded outputs (user
frames only, kernel frames, DWARF, a truncated file, hostile symbols), by both the fast path and
the line-by-line state machine; one profiled run read into on-CPU and off-CPU profiles."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cutaway.probes.profile import records
from cutaway.probes.profile.capture import read_perf_script
from cutaway.probes.profile.fold import (
    Folder,
    FoldOptions,
    fold_lines,
    folded_text,
    tidy_function,
)
from cutaway.probes.profile.native_fold import fold_perf_script
from tests.hostile import HOSTILE

FIXTURES = Path(__file__).parent.parent / "fixtures" / "perf"
RECORDED = ("user", "kernel", "dwarf", "truncated", "hostile")
ALL = FoldOptions(annotate_kernel=True, annotate_jit=True)


def _text(name: str) -> str:
    return (FIXTURES / f"{name}.txt").read_text()


@pytest.mark.parametrize("name", RECORDED)
def test_folding_is_inferno_s_on_recorded_outputs(name: str) -> None:
    text = _text(name)
    assert fold_perf_script(text) == (FIXTURES / f"{name}.folded").read_text()
    assert fold_perf_script(text, ALL) == (FIXTURES / f"{name}.all.folded").read_text()


@pytest.mark.parametrize("name", RECORDED)
def test_the_line_by_line_path_folds_the_same(name: str) -> None:
    text = _text(name)
    assert folded_text(fold_lines(text.split("\n"))) == (FIXTURES / f"{name}.folded").read_text()
    slow = fold_lines(text.split("\n"), Folder(ALL))
    assert folded_text(slow) == (FIXTURES / f"{name}.all.folded").read_text()


def test_comments_and_blank_lines_with_spaces_take_the_exact_path() -> None:
    text = _text("kernel")
    odd = "# a comment\n" + text.replace("\n\n", "\n   \n", 3)
    assert fold_perf_script(odd) == (FIXTURES / "kernel.folded").read_text()


@pytest.mark.skipif(shutil.which("inferno-collapse-perf") is None, reason="no inferno here")
@pytest.mark.parametrize("name", [*RECORDED, "offcpu"])
def test_inferno_itself_agrees_now(name: str) -> None:
    """With inferno installed (cargo install inferno), compare with it live, also on an output
    with scheduler events and switch records (which inferno reads as odd events)."""
    path = FIXTURES / f"{name}.txt"
    for options, flags in ((FoldOptions(), []), (ALL, ["--all"])):
        inferno = subprocess.run(
            ["inferno-collapse-perf", *flags, str(path)], capture_output=True, text=True
        )
        assert fold_perf_script(path.read_text(), options) == inferno.stdout


def test_hostile_symbols_stay_data_in_the_folded_stacks() -> None:
    """Every hostile string as a symbol (unicode too, which inferno 0.12.8 panics on) is a
    frame of its own; only ``;`` (the separator) becomes ``:``, an argument list goes, and
    whitespace around the symbol is trimmed."""
    lines = []
    for index, name in enumerate(HOSTILE):
        flat = name.replace("\r", " ").replace("\n", " ")
        lines.append(f"prog {index + 1}  1.0:    1000 cpu-clock: \n\t  118d {flat}+0x3 (/p)\n")
    folded = Folder(ALL).fold("\n".join(lines))
    leaves = {stack.split(";", 1)[1] for stack in folded}
    for name in HOSTILE:
        flat = tidy_function(name.replace("\r", " ").replace("\n", " ").strip())
        assert flat in leaves


def test_a_profile_survives_storing_with_hostile_frames() -> None:
    stacks = {
        f"prog;{name.replace(chr(10), ' ')};leaf\u2028x": i + 1 for i, name in enumerate(HOSTILE)
    }
    profile = records.Profile("on-cpu", records.NANOSECONDS, stacks, events=12, backend="perf")
    again = records.decode(records.encode(profile))
    assert again == profile
    with pytest.raises(records.ProfileFormatError):
        records.decode(b"not a profile")


def test_a_profiled_run_gives_on_cpu_and_off_cpu_time() -> None:
    """The recorded run of two.c: heavy() is on top on the CPU; the usleep(20 ms) at its end is
    off the CPU in clock_nanosleep, for about 20 ms, with the kernel frames where it slept."""
    on_cpu, off_cpu = read_perf_script(_text("offcpu"), Folder(ALL))
    assert on_cpu.unit == off_cpu.unit == records.NANOSECONDS
    top = max(on_cpu.stacks, key=lambda stack: on_cpu.stacks[stack])
    assert top.endswith(";heavy")
    assert on_cpu.events == len([x for x in _text("offcpu").split("\n") if "cpu-clock" in x])
    sleeping = {s: w for s, w in off_cpu.stacks.items() if "clock_nanosleep" in s}
    assert sleeping and all("schedule_[k]" in stack for stack in sleeping)
    assert 0.019 < sum(sleeping.values()) / 1e9 < 0.2
