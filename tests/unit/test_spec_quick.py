"""Quick mode: commands and options -> Spec, with errors keyed by the option at fault."""

from __future__ import annotations

import pytest

from cutaway.spec import SpecError, quick_spec


def quick_error(*args: list[str], **kwargs: object) -> SpecError:
    with pytest.raises(SpecError) as caught:
        quick_spec(*args, **kwargs)  # type: ignore[arg-type]
    error = caught.value
    assert (error.path, error.line) == (None, None)
    return error


def test_defaults() -> None:
    spec = quick_spec(["sleep 0.01", "sleep 0.02"])
    assert spec.name == "quick: sleep 0.01 vs sleep 0.02"
    assert [v.name for v in spec.variants] == ["sleep 0.01", "sleep 0.02"]
    assert spec.variants[0].command == ("sleep", "0.01")
    assert spec.baseline == "sleep 0.01"
    assert (spec.rounds, spec.warmup_rounds, spec.margin, spec.confidence) == (10, 1, 0.005, 0.95)
    assert (spec.source_path, spec.source_text) == (None, None)


def test_long_commands_are_numbered() -> None:
    long_command = "python3 -c 'import time; time.sleep(0.001)' --and-more"
    spec = quick_spec(["true", long_command])
    assert [v.name for v in spec.variants] == ["true", "command 2"]


def test_repeated_command_gets_unique_default_names() -> None:
    spec = quick_spec(["true", "true"])
    assert [v.name for v in spec.variants] == ["true", "true (2)"]


def test_names_baseline_and_options() -> None:
    spec = quick_spec(
        ["getent passwd root", "getent group root"],
        ["passwd", "group"],
        baseline="group",
        rounds=5,
        warmup_rounds=0,
        timeout_seconds=2.5,
        margin=0.02,
        until_width=0.005,
        max_time_seconds=60.0,
        env={"LC_ALL": "C"},
    )
    assert spec.name == "quick: passwd vs group"
    assert spec.baseline == "group"
    assert (spec.rounds, spec.warmup_rounds, spec.timeout_seconds) == (5, 0, 2.5)
    assert (spec.margin, spec.until_width, spec.max_time_seconds) == (0.02, 0.005, 60.0)
    assert all(dict(v.env) == {"LC_ALL": "C"} for v in spec.variants)


def test_shell_mode_keeps_the_string() -> None:
    spec = quick_spec(["seq 10 | wc -l"], shell=True)
    assert spec.variants[0].shell is True
    assert spec.variants[0].command == "seq 10 | wc -l"


def test_no_commands() -> None:
    assert quick_error([]).key == "-c"


def test_names_must_match_commands() -> None:
    error = quick_error(["a", "b"], ["only-one"])
    assert error.key == "--name"
    assert "one --name per -c" in error.message


def test_names_must_be_unique() -> None:
    error = quick_error(["a", "b"], ["x", "x"])
    assert error.key == "--name"
    assert 'duplicate name "x"' in error.message


def test_unknown_baseline() -> None:
    error = quick_error(["a", "b"], ["x", "y"], baseline="z")
    assert error.key == "--baseline"
    assert error.message == 'no variant is named "z" (variants: "x", "y")'


def test_shell_syntax_suggests_the_shell_option() -> None:
    error = quick_error(["true", "ls *.txt"])
    assert error.key == "-c"
    assert "--shell" in error.message
    assert "'*'" in error.message


def test_bad_rounds_and_margin() -> None:
    assert quick_error(["true"], rounds=0).key == "--rounds"
    assert quick_error(["true"], margin=1.5).key == "--margin"
    assert quick_error(["true"], timeout_seconds=0.0).key == "--timeout"


def test_bad_until_and_max_time() -> None:
    assert quick_error(["true"], until_width=0.0).key == "--until"
    assert quick_error(["true"], max_time_seconds=-1.0).key == "--max-time"


def test_bad_env_name() -> None:
    assert quick_error(["true"], env={"A=B": "1"}).key == "--env"
