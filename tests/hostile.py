"""User text that tries to become something else in a report: terminal escape sequences, Markdown
and HTML, spreadsheet formulas, rich markup, line breaks, very long names and unusual unicode.

Every report format must show each of these as data (tests/unit/test_reports_hostile.py), and so
must everything the CLI prints: progress, notices, warnings, errors, `list`
(tests/unit/test_cli_hostile.py, tests/integration/test_cli_terminal.py)."""

from __future__ import annotations

HOSTILE: tuple[str, ...] = (
    "\x1b[31mred\x1b[0m\x1b]0;title\x07",  # SGR colours and an OSC window title
    "`` `x` <script>alert(1)</script>",  # backtick runs around HTML
    "line one\nline two\r\nthree",
    "=cmd|' /C calc'!A0",  # CSV injection, as OWASP's example
    "@SUM(1+1)",
    "+1+1",
    "-2+3",
    "\tTAB",
    "[red]x[/red]",  # rich markup
    "*bold* _em_ [link](javascript:alert(1)) | pipe",
    "v" * 150,  # longer than any terminal line
    "naïve 名前 \u202eevil\u202c 🙂",  # accents, wide characters, a bidi override, emoji
    # Ends a <script> element (embedded JSON) and runs code if ever parsed as HTML.
    "</script><img src=x onerror=\"document.title='pwned'\">",
    # JavaScript's old line ends, a style and a comment end, and entities that must stay text.
    "a\u2028b\u2029c </style><!-- &amp; &lt;b&gt; '\"",
    # Last (tests name it as HOSTILE[-1]): clear the screen, retitle, 8-bit CSI, an emoji code.
    "\x1b[2J\x1b]0;pwned\x07\x9b1m :warning: [bold red]x[/]",
)

# File names given as output paths (--export-json, -o, --db): each must be refused with a
# message or written as a regular file where it says, never reach a device or another directory.
HOSTILE_PATHS: tuple[str, ...] = (
    "",
    "a\0b.json",  # NUL: no system call takes it
    "-rf.json",  # looks like an option
    "--export-json",
    "~/x.json",  # no shell: the tilde is a name
    "*.json",
    "report\x1b[2J\x07.json",  # control characters, shown escaped in a message
    "line\nbreak.json",
    "\u202eevil.json",  # a bidirectional override
    "spaces in name .json",
    "new-directory/",  # a trailing slash names a directory: never a file called new-directory
    "x" * 300,  # longer than a file name may be (255 bytes)
    "名前.json",
)

# Bytes a terminal acts on: C0 and C1 controls but the newline, DEL, and the bidirectional
# overrides and isolates. None of them may reach a terminal from user or program text.
TERMINAL_CONTROLS = "".join(
    chr(c) for c in (*range(0x00, 0x0A), *range(0x0B, 0x20), *range(0x7F, 0xA0))
) + "".join(chr(c) for c in (*range(0x2028, 0x202F), *range(0x2066, 0x206A)))


def raw_controls(text: str) -> list[str]:
    """The control characters in ``text`` that a terminal would act on (its newlines aside)."""
    return sorted({char for char in text if char in TERMINAL_CONTROLS})
