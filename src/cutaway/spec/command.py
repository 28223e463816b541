"""How a command as written becomes what the runner executes.

Without a shell (the default) a string command is split into an argument vector with
:func:`shlex.split` and executed directly, so that nothing but the command is measured. Shell
syntax in such a string would silently mean something else (``a | b`` would pass ``|`` and ``b``
as arguments to ``a``), so it is an error that suggests running through a shell instead.
"""

from __future__ import annotations

import re
import shlex

from cutaway.spec.errors import KeyPath, SpecError, describe

# Longest first, so that "&&" is reported as "&&" and not as "&".
_OPERATORS = ("&&", "||", ";;", ">>", "<<", ">&", "<&", "|", "&", ";", "<", ">", "(", ")")
_OPERATOR_CHARS = frozenset("|&;<>()")
_ASSIGNMENT = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*=\S*)")
_WORD_SEPARATORS = " \t\r\n"


def command_for(
    command: str | tuple[str, ...], *, shell: bool, key_path: KeyPath, shell_hint: str
) -> str | tuple[str, ...]:
    """The command as the runner takes it: shell code when ``shell``, else an argument vector.

    ``shell_hint`` tells how to ask for a shell where the command came from (``set shell =
    true`` in a file, ``pass --shell`` in quick mode)."""
    if shell:
        if not isinstance(command, str):
            message = "with shell = true the command must be one string of shell code"
            raise SpecError(f"{message}, found an array", key_path=key_path)
        return command
    if not isinstance(command, str):
        return command
    syntax = find_shell_syntax(command)
    if syntax is not None:
        raise SpecError(
            f"{describe(command)} uses shell syntax ({syntax}) that only works with a shell: "
            f"{shell_hint}, or quote the characters to pass them literally",
            key_path=key_path,
        )
    try:
        # A backslash at the end of a line continues the command, as in sh.
        argv = shlex.split(command.replace("\\\n", ""))
    except ValueError as error:
        message = f"cannot split {describe(command)} into arguments: {error}"
        raise SpecError(message, key_path=key_path) from None
    if not argv:
        raise SpecError("the command is empty", key_path=key_path)
    return tuple(argv)


def find_shell_syntax(command: str) -> str | None:
    """What in ``command`` needs a shell, as a message shows it, or None.

    Follows sh quoting: nothing is special inside single quotes, ``$`` and backticks still
    expand inside double quotes, a backslash escapes the next character. Reports operators
    (``|``, ``&&``, ``;``, ``>``, ...), expansions (``$``, backticks), ``*`` globs, ``~`` and
    ``#`` at the start of a word, and a leading ``NAME=value`` assignment. ``?`` and ``[`` are
    not reported: when they match no file sh passes them through unchanged, as exec does."""
    assignment = _ASSIGNMENT.match(command)
    if assignment is not None:
        return f"the variable assignment {assignment.group(1)!r}; use env for variables"
    quote = ""
    at_word_start = True
    index = 0
    while index < len(command):
        char = command[index]
        if quote == "'":
            quote = "" if char == "'" else quote
        elif char == "\\":
            index += 1  # the escaped character is literal, whatever it is
        elif quote == '"':
            if char in "$`":
                return f"{char!r} inside double quotes"
            quote = "" if char == '"' else quote
        elif char in "'\"":
            quote = char
        else:
            syntax = _unquoted_syntax(command, index, at_word_start)
            if syntax is not None:
                return syntax
        at_word_start = not quote and char in _WORD_SEPARATORS
        index += 1
    return None


def _unquoted_syntax(command: str, index: int, at_word_start: bool) -> str | None:
    char = command[index]
    if char in _OPERATOR_CHARS:
        operator = next(op for op in _OPERATORS if command.startswith(op, index))
        return repr(operator)
    if char in "$`":
        return repr(char)
    if char == "*":
        return "the glob '*'"
    if at_word_start and char == "~":
        return "'~' for the home directory"
    if at_word_start and char == "#":
        return "the comment '#'"
    return None
