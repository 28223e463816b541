"""Find the line of a key in TOML text, so that errors can say where they are.

``tomllib`` returns plain dicts without positions, so this module scans the raw text once and
records where every table header and every key starts. It understands what matters for that:
``[table]`` and ``[[array]]`` headers (numbering each array-of-tables entry), bare, quoted and
dotted keys, and values that span lines (multi-line strings and arrays), so that text inside a
value never looks like a key. It is only used on text that ``tomllib`` has already accepted,
and never raises: on anything it does not understand it skips to the next line.
"""

from __future__ import annotations

import json
import re

from cutaway.spec.errors import KeyPath

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_BASIC_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LITERAL_STRING = re.compile(r"'[^'\n]*'")
_INLINE_SPACE = " \t"


def find_line(text: str, key_path: KeyPath) -> int | None:
    """The 1-based line where ``key_path`` is defined, e.g. ``("variants", 2, "command")``.

    When the key itself is not in the text, the line of the nearest enclosing key or table
    that is (a missing ``command`` of ``variants[2]`` -> the third ``[[variants]]`` header);
    None when not even the outermost part is there."""
    lines = key_lines(text)
    for length in range(len(key_path), 0, -1):
        line = lines.get(tuple(key_path[:length]))
        if line is not None:
            return line
    return None


def key_lines(text: str) -> dict[KeyPath, int]:
    """Every table header and key of ``text`` with the line where it first appears."""
    return _Scanner(text).scan()


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1
        self.table: KeyPath = ()
        self.lines: dict[KeyPath, int] = {}
        # Entries seen so far of each array of tables, by its full path (with parent indices).
        self.array_counts: dict[KeyPath, int] = {}

    def scan(self) -> dict[KeyPath, int]:
        while self.pos < len(self.text):
            self._skip(_INLINE_SPACE)
            char = self._peek()
            if char == "[":
                self._header()
            elif char not in ("", "\n", "\r", "#"):
                self._key_value()
            self._skip_to_next_line()
        return self.lines

    # -- statements -------------------------------------------------------------------------

    def _header(self) -> None:
        is_array = self.text.startswith("[[", self.pos)
        self.pos += 2 if is_array else 1
        names = self._key()
        if not names:
            return
        path = self._resolve(names[:-1])
        if is_array:
            array_path = (*path, names[-1])
            index = self.array_counts.get(array_path, 0)
            self.array_counts[array_path] = index + 1
            path = (*array_path, index)
        else:
            path = self._resolve(names)
        # `[a.b]` also defines `a`, where an error about `a` should point.
        for length in range(1, len(path) + 1):
            self._record(path[:length])
        self.table = path

    def _key_value(self) -> None:
        names = self._key()
        self._skip(_INLINE_SPACE)
        if not names or self._peek() != "=":
            return
        self.pos += 1
        full_path = (*self.table, *names)
        for length in range(len(self.table) + 1, len(full_path) + 1):
            self._record(full_path[:length])
        self._skip(_INLINE_SPACE)
        self._skip_value()

    def _resolve(self, names: list[str]) -> KeyPath:
        """Header names to a key path, with the current index of each array of tables in it."""
        path: KeyPath = ()
        for name in names:
            path = (*path, name)
            count = self.array_counts.get(path)
            if count is not None:
                path = (*path, count - 1)
        return path

    def _record(self, path: KeyPath) -> None:
        self.lines.setdefault(path, self.line)

    # -- keys ---------------------------------------------------------------------------------

    def _key(self) -> list[str]:
        """A dotted key (``a."b.c".d``) as its parts; empty when there is none here."""
        names: list[str] = []
        while True:
            self._skip(_INLINE_SPACE)
            name = self._simple_key()
            if name is None:
                return []
            names.append(name)
            self._skip(_INLINE_SPACE)
            if self._peek() != ".":
                return names
            self.pos += 1

    def _simple_key(self) -> str | None:
        for pattern in (_BARE_KEY, _BASIC_STRING, _LITERAL_STRING):
            match = pattern.match(self.text, self.pos)
            if match is None:
                continue
            self.pos = match.end()
            token = match.group()
            if pattern is _BASIC_STRING:
                return _decode_basic_string(token)
            return token[1:-1] if pattern is _LITERAL_STRING else token
        return None

    # -- values -------------------------------------------------------------------------------

    def _skip_value(self) -> None:
        char = self._peek()
        if char in ('"', "'"):
            self._skip_string()
        elif char in ("[", "{"):
            self._skip_bracketed()
        # Any other value (number, bool, date) ends on this line: the caller skips the rest.

    def _skip_string(self) -> None:
        quote = self.text[self.pos]
        if self.text.startswith(quote * 3, self.pos):
            self._skip_multiline_string(quote)
            return
        self.pos += 1
        while self.pos < len(self.text) and self.text[self.pos] not in (quote, "\n"):
            self.pos += 2 if quote == '"' and self.text[self.pos] == "\\" else 1
        if self._peek() == quote:
            self.pos += 1

    def _skip_multiline_string(self, quote: str) -> None:
        self.pos += 3
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "\\" and quote == '"':
                self._advance(2)
            elif self.text.startswith(quote * 3, self.pos):
                self.pos += 3
                # Up to two more quotes right before the delimiter belong to the content.
                for _ in range(2):
                    if self._peek() == quote:
                        self.pos += 1
                return
            else:
                self._advance(1)

    def _skip_bracketed(self) -> None:
        depth = 0
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char in ('"', "'"):
                self._skip_string()
                continue
            if char == "#":
                self._skip_comment()
                continue
            if char in "[{":
                depth += 1
            elif char in "]}":
                depth -= 1
            self._advance(1)
            if depth == 0:
                return

    # -- characters ---------------------------------------------------------------------------

    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _advance(self, count: int) -> None:
        end = min(self.pos + count, len(self.text))
        self.line += self.text.count("\n", self.pos, end)
        self.pos = end

    def _skip(self, chars: str) -> None:
        while self._peek() and self._peek() in chars:
            self.pos += 1

    def _skip_comment(self) -> None:
        end = self.text.find("\n", self.pos)
        self.pos = len(self.text) if end < 0 else end

    def _skip_to_next_line(self) -> None:
        self._skip_comment()
        if self.pos < len(self.text):
            self._advance(1)


def _decode_basic_string(token: str) -> str:
    # TOML basic-string escapes are a subset of JSON's, except \UXXXXXXXX and \e; fall back to
    # the raw text for those rare keys rather than fail.
    try:
        decoded = json.loads(token)
    except ValueError:
        return token[1:-1]
    return decoded if isinstance(decoded, str) else token[1:-1]
