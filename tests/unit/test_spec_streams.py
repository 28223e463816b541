"""The experiment file's ignore_failure, input and output keys (hyperfine's --ignore-failure,
--input and --output): read, inherited, substituted and checked before anything runs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cutaway.spec import SpecError, load_spec, parse_spec


def write(tmp_path: Path, toml: str) -> Path:
    path = tmp_path / "experiment.toml"
    path.write_text(textwrap.dedent(toml).lstrip("\n"))
    return path


def test_ignore_failure_defaults_to_false_and_is_read() -> None:
    assert parse_spec('name = "x"\ncommand = "true"\n').ignore_failure is False
    spec = parse_spec('name = "x"\ncommand = "grep x /dev/null"\nignore_failure = true\n')
    assert spec.ignore_failure is True


def test_ignore_failure_must_be_a_boolean(tmp_path: Path) -> None:
    path = write(tmp_path, 'name = "x"\ncommand = "true"\nignore_failure = "yes"\n')
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value).startswith(f"{path}:3: ignore_failure: expected true or false")


def test_input_and_output_top_level_and_per_variant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "words.txt").write_text("a\nb\n")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "words.txt").write_text("c\n")
    spec = load_spec(
        write(
            tmp_path,
            """
            name = "streams"
            command = "sort"
            input = "words.txt"
            output = "pipe"
            [[variants]]
            name = "inherits"
            [[variants]]
            name = "own"
            output = "sorted.txt"
            [[variants]]
            name = "in d"
            cwd = "d"
            output = "inherit"
            """,
        )
    )
    by_name = {v.name: v for v in spec.variants}
    assert (by_name["inherits"].stdin, by_name["inherits"].stdout) == (
        str(tmp_path / "words.txt"),
        "pipe",
    )
    assert by_name["own"].stdout == str(tmp_path / "sorted.txt")
    # relative to where the command runs: its cwd
    assert by_name["in d"].stdin == str(tmp_path / "d" / "words.txt")
    assert by_name["in d"].stdout == "inherit"


def test_without_input_and_output_the_defaults() -> None:
    variant = parse_spec('name = "x"\ncommand = "true"\n').variants[0]
    assert (variant.stdin, variant.stdout) == (None, "null")


def test_input_and_output_are_substituted_under_a_matrix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for size in ("small", "big"):
        (tmp_path / f"{size}.txt").write_text(size)
    spec = load_spec(
        write(
            tmp_path,
            """
            name = "m"
            command = "wc -l"
            input = "{size}.txt"
            output = "out-{size}.txt"
            [matrix]
            size = ["small", "big"]
            """,
        )
    )
    assert [v.stdin for v in spec.variants] == [
        str(tmp_path / "small.txt"),
        str(tmp_path / "big.txt"),
    ]
    assert [v.stdout for v in spec.variants] == [
        str(tmp_path / "out-small.txt"),
        str(tmp_path / "out-big.txt"),
    ]


@pytest.mark.parametrize(
    ("toml", "where", "words"),
    [
        (
            'name = "x"\ncommand = "cat"\ninput = "missing.txt"\n',
            ":3: input:",
            'no such file: "missing.txt"',
        ),
        (
            'name = "x"\ncommand = "cat"\n[[variants]]\nname = "a"\ninput = "nope"\n',
            ":5: variants[0].input:",
            "no such file",
        ),
        (
            'name = "x"\ncommand = "cat"\noutput = "no/such/dir/out"\n',
            ":3: output:",
            "no such directory",
        ),
        (
            'name = "x"\ncommand = "cat"\n[[variants]]\nname = "a"\noutput = 3\n',
            ":5: variants[0].output:",
            "expected a non-empty string",
        ),
        (
            'name = "x"\ncommand = "cat"\ninput = "{n}.txt"\n[matrix]\nn = [1]\n',
            ":3: input:",
            "no such file",
        ),
    ],
)
def test_input_and_output_errors_name_file_line_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toml: str, where: str, words: str
) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, toml)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value).startswith(f"{path}{where}")
    assert words in str(caught.value)


def test_keep_leftovers_defaults_to_false_and_is_read() -> None:
    assert parse_spec('name = "x"\ncommand = "true"\n').keep_leftovers is False
    spec = parse_spec('name = "x"\ncommand = "true"\nkeep_leftovers = true\n')
    assert spec.keep_leftovers is True


def test_keep_leftovers_must_be_a_boolean(tmp_path: Path) -> None:
    path = write(tmp_path, 'name = "x"\ncommand = "true"\nkeep_leftovers = 1\n')
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value).startswith(f"{path}:3: keep_leftovers: expected true or false")


@pytest.mark.parametrize(
    "key",
    ['input = "out.txt"\noutput = "out.txt"', 'input = "out.txt"\n[[variants]]\nname = "a"'],
)
def test_an_input_that_is_an_output_of_the_experiment_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    """Each run of a variant with an output file empties it before the command starts: the
    same file as an input (of that variant or another) would be read empty or half-written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out.txt").write_text("data\n")
    other = '[[variants]]\nname = "b"\noutput = "out.txt"\n' if "[[variants]]" in key else ""
    path = write(tmp_path, f'name = "x"\ncommand = "cat"\n{key}\n{other}')
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value).startswith(f"{path}:3: input:"), str(caught.value)
    assert f'"{tmp_path / "out.txt"}" is also the output file of variant' in str(caught.value)
    assert (tmp_path / "out.txt").read_text() == "data\n"


def test_an_input_through_a_link_to_an_output_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("data\n")
    (tmp_path / "link.txt").symlink_to("in.txt")
    path = write(tmp_path, 'name = "x"\ncommand = "cat"\ninput = "link.txt"\noutput = "in.txt"\n')
    with pytest.raises(SpecError, match="is also the output file"):
        load_spec(path)
