"""Text from a user or a measured program, made safe to show: every control character is written
as an escape ("\\x1b", "\\n"), so a variant's name or a command's stderr can neither drive a
terminal (clear it, retitle it, recolour it) nor break a line that is meant to be one.

The one helper every human-facing output uses: the terminal and Markdown reports and every line
the CLI prints. It imports nothing, so that light commands (`cutaway list`) can use it without
the reports' dependencies."""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, and the bidirectional overrides and isolates that reorder what a
# terminal shows (Trojan Source, CVE-2021-42574).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_BUT_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    return named or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character written as an escape. Newlines are folded to
    "\\n" too, unless ``keep_newlines`` (a message of several lines, such as an error with the
    tail of a command's stderr); a carriage return is always escaped, since it would let the
    text overwrite what came before it on the line."""
    pattern = _CONTROL_BUT_NEWLINE if keep_newlines else _CONTROL
    return pattern.sub(_escape, text)
