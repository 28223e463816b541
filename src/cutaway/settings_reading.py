"""The one error type of an experiment file's readers, how it names keys and values in
messages, and the simplest readers they share.

Every problem with an experiment file or a quick-mode command line becomes a :class:`SpecError`
that says where (file, line, key) and what was expected, so that the CLI can print it as is.
It sits low (it imports nothing of cutaway but cutaway.visible) so that each probe's package
reads its own keys of the [probes] table and its own command-line options (ProbePlugin's
``read_settings``), raising the same error as cutaway.spec, which re-exports it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

from cutaway.visible import clip, display, left_out_note

# A key path inside a TOML document: table keys are strings, array positions are ints (0-based).
KeyPath = tuple[str | int, ...]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_LONG_INTEGER = 10**40
# Largest integer a store's columns (SQLite INTEGER, PostgreSQL BIGINT) hold.
MAX_STORED_INTEGER = 2**63 - 1
# More digits than any limit has (2**63 has 19): an integer option's text is refused as too
# large unread.
_MOST_DIGITS = 30


class StoredSettingError(ValueError):
    """A probe's setting in a stored experiment that cutaway never writes there: the store was
    edited or damaged. Bad input, as a damaged store is (exit 2); the message names the key."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(
            f"a stored experiment's {problem}: the store was edited or damaged "
            "(nothing was changed)"
        )


def stored_names(value: object, key: str) -> tuple[str, ...]:
    """A probe's stored list of names, as a tuple; StoredSettingError naming ``key`` when it
    is anything else."""
    if not isinstance(value, list | tuple) or not all(isinstance(name, str) for name in value):
        raise StoredSettingError(f"{key}: {value!r} is not a list of names")
    return tuple(value)


class SpecError(ValueError):
    """A problem with an experiment specification. It is a ``ValueError``: bad input.

    ``path`` is the file as given (None for text and quick mode), ``line`` is 1-based, ``key``
    is a dotted key such as ``variants[2].command`` or a command-line option such as
    ``--baseline``. ``key_path`` is the same key as a tuple, used to find its line."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        key: str | None = None,
        key_path: KeyPath | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.key = key if key is not None or key_path is None else format_key(key_path)
        self.key_path = key_path

    def located(self, path: str | None, line: int | None) -> SpecError:
        """The same error with a file and line filled in (where they were still unknown)."""
        return SpecError(
            self.message,
            path=self.path if self.path is not None else path,
            line=self.line if self.line is not None else line,
            key=self.key,
            key_path=self.key_path,
        )

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
        elif self.line is not None:
            where = f"line {self.line}"
        parts = [part for part in (where, self.key) if part]
        return ": ".join([*parts, self.message])

    def __repr__(self) -> str:
        return (
            f"SpecError({self.message!r}, path={self.path!r}, line={self.line!r}, key={self.key!r})"
        )


def format_key(key_path: Sequence[str | int]) -> str:
    """``("variants", 2, "env", "A.B")`` -> ``variants[2].env."A.B"``."""
    text = ""
    for part in key_path:
        if isinstance(part, int):
            text += f"[{part}]"
            continue
        if _BARE_KEY.fullmatch(part):
            name = part
        else:
            shown, left_out = clip(part)
            name = json.dumps(shown) + left_out_note(left_out)
        text = f"{text}.{name}" if text else name
    return text


def describe(value: object) -> str:
    """A TOML value as a message shows it after "found": ``"ten"``, ``3``, ``true``, ``a table``;
    a long text cut to its first characters (:func:`cutaway.visible.clip`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        shown, left_out = clip(value)
        return json.dumps(shown, ensure_ascii=False) + left_out_note(left_out)
    if isinstance(value, int) and abs(value) >= _LONG_INTEGER:
        # str() of an integer past 4300 digits raises; and 40 digits say enough.
        digits = int(value.bit_length() * math.log10(2)) + 1
        return f"{'-' if value < 0 else ''}an integer of about {digits} digits"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    import datetime  # here only: every command imports this module, TOML's dates are rare

    if isinstance(value, datetime.date | datetime.time):
        return "a date/time"
    return type(value).__name__


def expected(what: str, value: object, key_path: KeyPath) -> SpecError:
    """The error for a value of the wrong type or out of range."""
    return SpecError(f"expected {what}, found {describe(value)}", key_path=key_path)


def read_bool(value: object, key_path: KeyPath) -> bool:
    if not isinstance(value, bool):
        raise expected("true or false", value, key_path)
    return value


def read_integer(
    value: object, key_path: KeyPath, minimum: int, maximum: int = MAX_STORED_INTEGER
) -> int:
    """An integer from ``minimum`` to ``maximum`` (by default the largest a store holds):
    every integer key and option is read here, so that none can reach a store's 64-bit columns
    or a tool's argument out of range."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise expected(f"an integer >= {minimum}", value, key_path)
    if value > maximum:
        raise expected(f"an integer <= {maximum}", value, key_path)
    return value


def integer_argument(text: str) -> int:
    """The argparse type of every integer option (``--rounds``, ``--seed``, ``--connections``
    ...): argparse's own ``int`` quotes the whole text in its error, and raises past 4300
    digits. The range is checked after, by the reader of the key the option sets, so that an
    option and its file key say the same."""
    digits = text.strip().removeprefix("-").removeprefix("+")
    if digits.isascii() and digits.isdigit() and len(digits) <= _MOST_DIGITS:
        return int(text)
    import argparse  # only for the error: the command line has imported it already

    if not (digits.isascii() and digits.isdigit()):
        raise argparse.ArgumentTypeError(f"expected an integer, found {display(text)!r}")
    raise argparse.ArgumentTypeError(f"{display(text)} is far too large")
