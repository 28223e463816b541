"""User text that tries to become something else in a report: terminal escape sequences, Markdown
and HTML, spreadsheet formulas, rich markup, line breaks, very long names and unusual unicode.

Every report format must show each of these as data (tests/unit/test_reports_hostile.py)."""

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
)
