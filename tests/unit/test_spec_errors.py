"""Every kind of bad experiment file raises one SpecError naming the file, line and key."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cutaway.spec import SpecError, load_spec


def load_error(tmp_path: Path, toml: str) -> SpecError:
    path = tmp_path / "experiment.toml"
    path.write_text(textwrap.dedent(toml).lstrip("\n"))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    error = caught.value
    assert error.path == str(path)
    return error


def test_toml_syntax_error_carries_its_line(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        """
        name = "x"
        command = "true"
        rounds = = 3
        """,
    )
    assert error.line == 3
    assert error.key is None
    assert error.message.startswith("invalid TOML:")
    assert "(at line" not in error.message
    assert str(error) == f"{error.path}:3: {error.message}"


def test_toml_error_at_end_of_document_points_at_last_line(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'name = "x"\ncommand = "unterminated\n')
    assert error.line == 2


def test_unknown_top_level_key(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        """
        name = "x"
        command = "true"
        round = 3
        """,
    )
    assert (error.line, error.key) == (3, "round")
    assert "did you mean 'rounds'?" in error.message


def test_variant_key_at_top_level_says_where_it_belongs(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'name = "x"\ncommand = "true"\nenv = { A = "1" }\n')
    assert (error.line, error.key) == (3, "env")
    assert "[[variants]]" in error.message


def test_unknown_variant_key_suggests_the_close_one(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        """
        name = "x"

        [[variants]]
        name = "a"
        command = "true"

        [[variants]]
        name = "b"
        command = "true"

        [[variants]]
        name = "c"
        comand = "true"
        """,
    )
    assert (error.line, error.key) == (13, "variants[2].comand")
    assert str(error) == (
        f"{error.path}:13: variants[2].comand: unknown key (did you mean 'command'?)"
    )


def test_wrong_type_says_what_was_expected_and_found(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'name = "x"\ncommand = "true"\nrounds = "ten"\n')
    assert (error.line, error.key) == (3, "rounds")
    assert error.message == 'expected an integer >= 1, found "ten"'


def test_rounds_below_one_is_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'name = "x"\ncommand = "true"\nrounds = 0\n')
    assert (error.line, error.key) == (3, "rounds")
    assert error.message == "expected an integer >= 1, found 0"


def test_missing_command_points_at_the_variant_header(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        """
        name = "x"

        [[variants]]
        name = "a"
        command = "true"

        [[variants]]
        name = "b"
        """,
    )
    assert (error.line, error.key) == (7, "variants[1].command")
    assert "no command" in error.message


def test_no_variants_and_no_command(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'name = "x"\n')
    assert (error.line, error.key) == (None, "command")
    assert str(error) == f"{error.path}: command: {error.message}"


def test_unknown_baseline_lists_the_valid_names(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        """
        name = "x"
        baseline = "c"

        [[variants]]
        name = "a"
        command = "true"

        [[variants]]
        name = "b"
        command = "false"
        """,
    )
    assert (error.line, error.key) == (2, "baseline")
    assert error.message == 'no variant is named "c" (variants: "a", "b")'


def test_undefined_placeholder_names_line_and_key(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        """
        name = "x"

        [matrix]
        n = [1, 2]

        [[variants]]
        name = "a"
        command = ["echo", "{n}", "{m}"]
        """,
    )
    assert (error.line, error.key) == (8, "variants[0].command[2]")
    assert "{m} is not a matrix parameter" in error.message


def test_undefined_placeholder_in_inherited_command_names_the_top_level_key(
    tmp_path: Path,
) -> None:
    error = load_error(
        tmp_path,
        """
        name = "x"
        command = "echo {typo}"

        [matrix]
        n = [1, 2]

        [[variants]]
        name = "a"
        """,
    )
    assert (error.line, error.key) == (2, "command")


def test_duplicate_names_after_expansion(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        """
        name = "x"
        command = "true"

        [matrix]
        n = [1, 2]
        m = ["a", "b"]

        [[variants]]
        name = "run-{n}"
        """,
    )
    assert (error.line, error.key) == (9, "variants[0].name")
    assert 'duplicate variant name "run-1"' in error.message


def test_duplicate_declared_names(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        """
        name = "x"
        command = "true"

        [[variants]]
        name = "a"

        [[variants]]
        name = "a"
        """,
    )
    assert (error.line, error.key) == (8, "variants[1].name")
    assert "also variants[0]" in error.message


def test_bad_duration(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'name = "x"\ncommand = "true"\ntimeout = "10 parsecs"\n')
    assert (error.line, error.key) == (3, "timeout")
    assert error.message.startswith("expected a duration")
    assert error.message.endswith('found "10 parsecs"')


def test_bad_percentage(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'name = "x"\ncommand = "true"\nmargin = "-1%"\n')
    assert (error.line, error.key) == (3, "margin")
    assert error.message.startswith("expected a percentage")


def test_margin_of_100_percent_is_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'name = "x"\ncommand = "true"\nmargin = "100%"\n')
    assert (error.line, error.key) == (3, "margin")


def test_zero_max_time_is_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'name = "x"\ncommand = "true"\nmax_time = "0s"\n')
    assert (error.line, error.key) == (3, "max_time")
    assert error.message == 'expected a duration > 0, found "0s"'


def test_bad_matrix_value(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        """
        name = "x"
        command = "true"

        [matrix]
        senders = [1, 10]
        queue_dirs = [1, [2, 3]]
        """,
    )
    assert (error.line, error.key) == (6, "matrix.queue_dirs[1]")
    assert error.message == "expected a string, integer, float or boolean, found an array"


def test_a_toml_date_where_a_number_belongs_is_named_as_one(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        """
        name = "x"
        command = "true"
        rounds = 1979-05-27
        """,
    )
    assert error.key == "rounds"
    assert error.message.endswith("found a date/time")


def test_empty_matrix_parameter(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'name = "x"\ncommand = "true"\n[matrix]\nn = []\n')
    assert (error.line, error.key) == (4, "matrix.n")


def test_shell_syntax_without_shell(tmp_path: Path) -> None:
    error = load_error(
        tmp_path,
        """
        name = "x"

        [[variants]]
        name = "a"
        command = "getent passwd root | wc -l"
        """,
    )
    assert (error.line, error.key) == (5, "variants[0].command")
    assert "'|'" in error.message
    assert "shell = true" in error.message


def test_array_command_with_shell_is_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'name = "x"\nshell = true\ncommand = ["echo", "hi"]\n')
    assert (error.line, error.key) == (3, "command")


def test_unsupported_version(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'version = 2\nname = "x"\ncommand = "true"\n')
    assert (error.line, error.key) == (1, "version")
    assert error.message.startswith("unsupported version 2")


def test_missing_name(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'command = "true"\n')
    assert (error.line, error.key) == (None, "name")


def test_missing_variant_name_without_matrix(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'name = "x"\n\n[[variants]]\ncommand = "true"\n')
    assert (error.line, error.key) == (3, "variants[0].name")


def test_bad_env_value(tmp_path: Path) -> None:
    error = load_error(
        tmp_path, 'name = "x"\n[[variants]]\nname = "a"\ncommand = "true"\nenv = { A = true }\n'
    )
    assert (error.line, error.key) == (5, "variants[0].env.A")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert (caught.value.path, caught.value.line, caught.value.key) == (str(path), None, None)
    assert str(caught.value) == f"{path}: no such file"


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path)
    assert caught.value.path == str(tmp_path)


def test_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'name = "caf\xe9"\n')
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert "UTF-8" in caught.value.message
