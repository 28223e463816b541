"""Text from a user or a measured program, made safe to show: every control character is written
as an escape ("\\x1b", "\\n"), so a variant's name or a command's stderr can neither drive a
terminal (clear it, retitle it, recolour it) nor break a line that is meant to be one.

The one helper every human-facing output uses: the terminal and Markdown reports and every line
the CLI prints. It imports nothing, so that light commands (`cutaway list`) can use it without
the reports' dependencies."""

from __future__ import annotations

# C0 and C1 controls, DEL, the line and paragraph separators (which break a line that is meant
# to be one), and the bidirectional overrides and isolates that reorder what a terminal shows
# (Trojan Source, CVE-2021-42574). A translation table rather than a regular
# expression: `re` costs `cutaway list` a good part of its start-up.
_CONTROLS = [*range(0x00, 0x20), *range(0x7F, 0xA0), *range(0x2028, 0x202F), *range(0x2066, 0x206A)]
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(code: int) -> str:
    named = _NAMED.get(chr(code))
    return named or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


_ESCAPES = {code: _escape(code) for code in _CONTROLS}
_ESCAPES_BUT_NEWLINE = {code: text for code, text in _ESCAPES.items() if code != ord("\n")}


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character written as an escape. Newlines are folded to
    "\\n" too, unless ``keep_newlines`` (a message of several lines, such as an error with the
    tail of a command's stderr); a carriage return is always escaped, since it would let the
    text overwrite what came before it on the line."""
    return text.translate(_ESCAPES_BUT_NEWLINE if keep_newlines else _ESCAPES)


# The most characters of one user-given text (a name, a command, a path, a URL) a message
# shows: a 1 MB variant name must not become a 1 MB error.
DISPLAY_CHARACTERS = 200
# The most characters of one piece of a report's prose (a line or a fact, which may quote a
# command or a message, or a value of the environment's record): far more than any sentence of
# cutaway's own, so that only a user's or a program's text is ever clipped.
PROSE_CHARACTERS = 1_000


def clip(text: str | bytes, limit: int = DISPLAY_CHARACTERS) -> tuple[str, int]:
    """A user's text as a message quotes it, and how many characters were left out: bytes
    decoded as UTF-8 with replacement, and so are the undecodable bytes of a command-line
    argument (which Python keeps as lone surrogates that a UTF-8 terminal cannot print), cut
    to ``limit`` characters. Control characters are left to :func:`visible`, applied to the
    whole line printed."""
    if isinstance(text, bytes):
        decoded = text.decode("utf-8", errors="replace")
    else:
        try:
            data = text.encode("utf-8", errors="surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate that is no escaped byte
            data = text.encode("utf-8", errors="surrogatepass")
        decoded = data.decode("utf-8", errors="replace")
    return decoded[:limit], max(0, len(decoded) - limit)


def display(text: str | bytes, limit: int = DISPLAY_CHARACTERS) -> str:
    """:func:`clip`'s text, followed by the count of the characters left out, if any."""
    shown, left_out = clip(text, limit)
    return shown + left_out_note(left_out)


def left_out_note(left_out: int) -> str:
    return f"... ({left_out:,} more characters)" if left_out else ""
