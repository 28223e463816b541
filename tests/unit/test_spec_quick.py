"""Quick mode: commands and options -> Spec, with errors keyed by the option at fault."""

from __future__ import annotations

import pytest

from cutaway.spec import SpecError, quick_spec
from cutaway.spec.quick import parameter_list, parameter_scan


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


# --- hyperfine's options: hooks, parameters, shells, input and output -------------------------


def test_a_hook_given_once_is_every_variants() -> None:
    spec = quick_spec(["true", "false"], hooks={"setup": ["make"], "cleanup": ["rm -f x"]})
    assert [v.hooks.setup for v in spec.variants] == ["make", "make"]
    assert [v.hooks.cleanup for v in spec.variants] == ["rm -f x", "rm -f x"]
    assert [v.hooks.prepare for v in spec.variants] == [None, None]


def test_a_hook_given_per_command_is_each_ones_in_order() -> None:
    hooks = {"prepare": ["echo a", "echo b"], "conclude": ["c1", "  "]}
    spec = quick_spec(["true", "false"], hooks=hooks)
    assert [v.hooks.prepare for v in spec.variants] == ["echo a", "echo b"]
    assert [v.hooks.conclude for v in spec.variants] == ["c1", None]  # empty is none


def test_a_hook_given_neither_once_nor_per_command() -> None:
    error = quick_error(["a", "b", "c"], hooks={"cleanup": ["x", "y"]})
    assert error.key == "--cleanup"
    assert "once per -c" in error.message


def test_parameter_scan_values() -> None:
    assert parameter_scan("N", "1", "10", "3").values == ("1", "4", "7", "10")
    assert parameter_scan("N", "1", "9", "3").values == ("1", "4", "7")
    assert parameter_scan("t", "0.1", "0.3", "0.1").values == ("0.1", "0.2", "0.3")
    assert parameter_scan("t", "1", "2", "0.5").values == ("1", "1.5", "2")
    assert parameter_scan("N", "5", "5").values == ("5",)


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (("N", "x", "3", None), "--parameter-scan"),
        (("N", "3", "1", None), "--parameter-scan"),
        (("N", "1", "3", "0"), "--parameter-step-size"),
        (("N", "1", "3", "-1"), "--parameter-step-size"),
        (("N", "1", "1e9", None), "--parameter-scan"),
        (("not a name", "1", "3", None), "--parameter-scan"),
    ],
)
def test_bad_parameter_scan(args: tuple[str, str, str, str | None], key: str) -> None:
    with pytest.raises(SpecError) as caught:
        parameter_scan(*args)
    assert caught.value.key == key


def test_parameter_list_values() -> None:
    assert parameter_list("cc", "gcc,clang").values == ("gcc", "clang")
    with pytest.raises(SpecError) as caught:
        parameter_list("cc", "gcc,gcc")
    assert caught.value.key == "--parameter-list"


def test_parameters_substitute_in_commands_names_and_hooks() -> None:
    spec = quick_spec(
        ["sleep 0.0{N}"],
        parameters=[parameter_scan("N", "1", "3")],
        hooks={"setup": ["echo {N}"]},
    )
    assert [v.name for v in spec.variants] == ["N=1", "N=2", "N=3"]  # named by parameters
    assert [v.command for v in spec.variants] == [("sleep", f"0.0{n}") for n in (1, 2, 3)]
    assert [v.hooks.setup for v in spec.variants] == ["echo 1", "echo 2", "echo 3"]
    assert [dict(v.params) for v in spec.variants] == [{"N": str(n)} for n in (1, 2, 3)]
    assert spec.baseline == "N=1"


def test_several_lists_make_a_product_first_varying_slowest() -> None:
    spec = quick_spec(
        ["gzip -{level} -c {file}"],
        parameters=[parameter_list("level", "1,9"), parameter_list("file", "a,b")],
    )
    assert [v.name for v in spec.variants] == [
        "level=1,file=a",
        "level=1,file=b",
        "level=9,file=a",
        "level=9,file=b",
    ]
    assert spec.variants[3].command == ("gzip", "-9", "-c", "b")


def test_parameters_with_several_commands_and_names() -> None:
    scan = [parameter_scan("N", "1", "2")]
    named = quick_spec(["sleep {N}", "true"], ["sleep {N}s", "nothing"], parameters=scan)
    assert [v.name for v in named.variants] == [
        "sleep 1s",
        "sleep 2s",
        "nothing[N=1]",
        "nothing[N=2]",
    ]
    unnamed = quick_spec(["sleep {N}", "true"], parameters=scan)
    assert [v.name for v in unnamed.variants] == ["sleep 1", "sleep 2", "true[N=1]", "true[N=2]"]


def test_parameter_errors() -> None:
    error = quick_error(["sleep {M}"], parameters=[parameter_list("N", "1,2")])
    assert error.key == "-c"
    assert "{M} is not a parameter" in error.message
    twice = [parameter_list("N", "1"), parameter_scan("N", "1", "2")]
    assert quick_error(["sleep {N}"], parameters=twice).key == "--parameter-scan"


def test_without_parameters_braces_are_text() -> None:
    spec = quick_spec(["awk '{print}' f"])
    assert spec.variants[0].command == ("awk", "{print}", "f")


@pytest.mark.parametrize(
    ("shell", "flag"), [(True, True), ("sh", True), (False, False), ("none", False)]
)
def test_shell_choices_sh_and_none(shell: bool | str, flag: bool) -> None:
    spec = quick_spec(["echo hi"], shell=shell)
    assert spec.variants[0].shell is flag


def test_another_shell_runs_the_string_as_its_code() -> None:
    spec = quick_spec(["echo {N} | cat"], shell="bash", parameters=[parameter_list("N", "1")])
    variant = spec.variants[0]
    assert (variant.shell, variant.command) == (False, ("bash", "-c", "echo 1 | cat"))


def test_a_shell_that_is_not_there() -> None:
    assert quick_error(["true"], shell="no-such-shell-here").key == "--shell"
