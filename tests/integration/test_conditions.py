"""[[conditions]] run for real: each variant's copies in every round with their condition's
prepare steps, one setup and one cleanup per declared variant (a server started for it serves
all its conditions), and the comparisons along both axes in the JSON report."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cutaway_command import cutaway

FILE = """
name = "cold and warm"
rounds = 2
warmup_rounds = 0
shell = true
[[variants]]
name = "a"
command = "echo run-a-$CUTAWAY_CONDITION >> log"
setup = "echo setup-a >> log"
cleanup = "echo cleanup-a >> log"
[[variants]]
name = "b"
command = "echo run-b-$CUTAWAY_CONDITION >> log"
setup = "echo setup-b >> log"
prepare = "echo prepare-b >> log"
[[conditions]]
name = "warm"
[[conditions]]
name = "cold"
prepare = "echo cold-step >> log"
"""


def test_conditions_run_with_their_steps_and_are_compared(tmp_path: Path) -> None:
    (tmp_path / "exp.toml").write_text(FILE)
    result = cutaway("run", "exp.toml", "--export-json", "out.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    log = (tmp_path / "log").read_text().split()
    assert log.count("setup-a") == 1 and log.count("setup-b") == 1 and log.count("cleanup-a") == 1
    for run in ("run-a-warm", "run-a-cold", "run-b-warm", "run-b-cold"):
        assert log.count(run) == 2
    assert log.count("prepare-b") == 4  # the variant's own prepare, in both conditions
    assert log.count("cold-step") == 4  # the condition's steps, for both variants
    for index, word in enumerate(log):  # the cold step comes right before each cold run
        if word == "cold-step":
            assert log[index + 1] in ("run-a-cold", "run-b-cold")
    report = json.loads((tmp_path / "out.json").read_text())
    experiment = report["experiments"][0]
    assert experiment["conditions"] == [
        {"name": "warm", "prepare": None},
        {"name": "cold", "prepare": "echo cold-step >> log"},
    ]
    assert experiment["baseline"] == "a/warm"
    pairs = {(c["baseline"], c["variant"]) for c in report["comparisons"] if c["metric"] == "wall"}
    assert pairs == {
        ("a/warm", "b/warm"),
        ("a/cold", "b/cold"),
        ("a/warm", "a/cold"),
        ("b/warm", "b/cold"),
    }
    assert "condition cold (prepare: echo cold-step >> log)" in result.stdout
