"""Commands without a shell: split into argv, and shell syntax detected rather than mangled."""

from __future__ import annotations

import pytest

from cutaway.spec import SpecError
from cutaway.spec.command import command_for, find_shell_syntax


@pytest.mark.parametrize(
    ("command", "found"),
    [
        ("a | b", "'|'"),
        ("a && b", "'&&'"),
        ("a || b", "'||'"),
        ("a; b", "';'"),
        ("a > out", "'>'"),
        ("a >> out", "'>>'"),
        ("a < in", "'<'"),
        ("a &", "'&'"),
        ("(a)", "'('"),
        ("echo $HOME", "'$'"),
        ("echo `date`", "'`'"),
        ('echo "$HOME"', "'$' inside double quotes"),
        ("ls *.txt", "the glob '*'"),
        ("cat ~/x", "'~' for the home directory"),
        ("a # comment", "the comment '#'"),
        ("LC_ALL=C sort", "the variable assignment 'LC_ALL=C'; use env for variables"),
    ],
)
def test_shell_syntax_is_found(command: str, found: str) -> None:
    assert find_shell_syntax(command) == found


@pytest.mark.parametrize(
    "command",
    [
        "getent passwd root",
        "echo 'a | b; $HOME *'",
        'echo "a | b; *"',
        "echo a\\|b \\$x",
        "curl http://localhost/?a=1",
        "grep -E a[bc] file",
        "awk {print} x~y a#b",
        "python3 -m pkg --opt=1",
    ],
)
def test_plain_commands_pass(command: str) -> None:
    assert find_shell_syntax(command) is None


def test_string_is_split_like_sh() -> None:
    command = command_for(
        "echo 'a b' \"c d\" e\\\n f", shell=False, key_path=("command",), shell_hint="h"
    )
    assert command == ("echo", "a b", "c d", "e", "f")


def test_unbalanced_quote_is_an_error() -> None:
    with pytest.raises(SpecError) as caught:
        command_for("echo 'oops", shell=False, key_path=("command",), shell_hint="h")
    assert caught.value.key == "command"
    assert "cannot split" in caught.value.message


def test_array_is_kept_as_is_without_a_shell() -> None:
    argv = ("printf", "%s|%s", "$HOME", "*")
    assert command_for(argv, shell=False, key_path=("command",), shell_hint="h") == argv
