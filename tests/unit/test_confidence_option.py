"""The confidence level on the command line: ``cutaway run --confidence 99%`` sets the level of
every interval and verdict of the experiment (as the file's ``confidence`` does), and
``cutaway report|export ID --confidence LEVEL`` reads stored rounds at another level, nothing
re-run; a bad level is refused with the option named."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cutaway.model import Run, RunStatus, Spec, Variant
from cutaway.spec import SpecError, apply_overrides, parse_spec
from cutaway.store import Store
from tests.cutaway_command import cutaway

FILE = """
name = "t"
{line}
[[variants]]
name = "a"
command = "true"
[[variants]]
name = "b"
command = "true "
"""


@pytest.mark.parametrize(
    ("line", "level"),
    [
        ("", 0.95),
        ("confidence = 0.99", 0.99),
        ('confidence = "99%"', 0.99),
        ('confidence = "0.9"', 0.9),
    ],
)
def test_the_file_takes_a_number_or_a_percentage(line: str, level: float) -> None:
    assert parse_spec(FILE.format(line=line), "x.toml").confidence == pytest.approx(level)


@pytest.mark.parametrize("value", ["1", "0", "1.5", '"100%"', '"ninety"', "true", '"-5%"', "nan"])
def test_a_level_outside_zero_and_one_is_refused_naming_the_line(value: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(FILE.format(line=f"confidence = {value}"), "x.toml")
    assert str(caught.value).startswith("x.toml:3: confidence: expected a number between 0 and 1")


def test_the_command_line_sets_it() -> None:
    default = parse_spec(FILE.format(line=""), "x.toml")
    assert apply_overrides(default, {"--confidence": "99%"}).confidence == pytest.approx(0.99)
    assert apply_overrides(default, {"--confidence": "0.9"}).confidence == pytest.approx(0.9)
    with pytest.raises(SpecError, match="--confidence"):
        apply_overrides(default, {"--confidence": "99"})


def _store(path: Path) -> str:
    """A store of one experiment, #1, at the default 95 %: 40 rounds of a ~1 % change."""
    spec = Spec("t", (Variant("a", ("x",)), Variant("b", ("y",))), "a", rounds=40)
    with Store(path) as store:
        experiment_id = store.create_experiment(spec, {}, None, "test")
        for round_index in range(40):
            noise = 1.0 + 0.02 * ((round_index * 7919) % 13 - 6) / 6
            for position, (name, wall) in enumerate((("a", 1.0), ("b", 1.01 * noise))):
                run = Run(name, round_index, position, RunStatus.OK, 0, None, {"wall": wall}, 0.0)
                store.add_run(experiment_id, run)
        store.finish_experiment(experiment_id, "complete", None)
    return str(path)


def test_report_and_export_read_stored_rounds_at_another_level(tmp_path: Path) -> None:
    db = _store(tmp_path / "c.db")
    environment = {**os.environ, "CUTAWAY_CACHE_DIR": str(tmp_path / "cache")}

    def wall(command: str, *options: str) -> dict[str, float]:
        result = cutaway(command, "1", "--db", db, "--format", "json", *options, env=environment)
        assert result.returncode == 0, result.stderr
        (found,) = [c for c in json.loads(result.stdout)["comparisons"] if c["metric"] == "wall"]
        return found

    default = wall("report")
    wider = wall("report", "--confidence", "99%")  # not the kept 95 % analysis
    narrower = wall("export", "--confidence", "0.8")
    assert wider["ratio"] == pytest.approx(default["ratio"])
    assert wider["ci_low"] < default["ci_low"] < narrower["ci_low"]
    assert narrower["ci_high"] < default["ci_high"] < wider["ci_high"]
    assert wall("report") == default
    text = cutaway("report", "1", "--db", db, "--confidence", "99%", env=environment).stdout
    assert "99 % CI" in text and "95 % CI" not in text


def test_a_bad_level_is_refused_with_the_option_named(tmp_path: Path) -> None:
    db = _store(tmp_path / "c.db")
    for command in ("report", "export"):
        refused = cutaway(command, "1", "--db", db, "--confidence", "1.5")
        assert refused.returncode == 2
        assert "argument --confidence: expected a number between 0 and 1" in refused.stderr
    csv = cutaway("export", "1", "--db", db, "--format", "runs-csv", "--confidence", "0.9")
    assert csv.returncode == 2 and "--confidence is for the report formats" in csv.stderr
    run = cutaway("run", "-c", "true", "--confidence", "100%", "--db", db)
    assert run.returncode == 2 and "--confidence: expected a number between 0 and 1" in run.stderr
