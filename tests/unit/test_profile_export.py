"""Exports of stored profiles: folded text that flame graph tools read back line by line, and
speedscope JSON; hostile variant and frame names stay data in both."""

from __future__ import annotations

import json

from cutaway.probes.profile import records
from cutaway.probes.profile.export import render_folded, render_speedscope
from tests.hostile import HOSTILE


def _profiles() -> list[tuple[str, records.Profile]]:
    stacks = {f"prog;main;{name.replace(';', ':').replace(chr(10), ' ')}": 7 for name in HOSTILE}
    return [
        (variant, records.Profile(what, records.NANOSECONDS, stacks, events=1))
        for variant in HOSTILE
        for what in (records.ON_CPU, records.OFF_CPU)
    ] * 2  # two runs each: summed


def test_folded_export_has_one_stack_and_one_weight_per_line() -> None:
    text = render_folded(_profiles())
    lines = text.split("\n")[:-1]
    assert len(lines) == len(HOSTILE) * 2 * len(HOSTILE)
    for line in lines:
        stack, _, weight = line.rpartition(" ")
        assert weight == "14"  # 7 per run, two runs
        variant, what, process, *_ = stack.split(";")
        assert what in ("on-cpu", "off-cpu") and process == "prog"
        assert "\n" not in variant and "\r" not in variant
    assert any(line.startswith("line one line two three;on-cpu;") for line in lines)


def test_speedscope_export_keeps_every_name() -> None:
    document = json.loads(render_speedscope(_profiles(), HOSTILE[1]))
    assert document["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    assert document["name"] == HOSTILE[1]
    names = {frame["name"] for frame in document["shared"]["frames"]}
    assert "v" * 150 in names and "`` `x` <script>alert(1)</script>" in names
    profile = document["profiles"][0]
    assert profile["type"] == "sampled" and profile["unit"] == "nanoseconds"
    assert profile["endValue"] == sum(profile["weights"]) == 14 * len(HOSTILE)
    frames = document["shared"]["frames"]
    assert all(frames[sample[0]]["name"] == "prog" for sample in profile["samples"])
