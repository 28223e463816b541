"""cutaway._cwotlp (native/cw_otlp_python.c): the OTLP reader's native nester and counter."""

from collections.abc import Callable
from typing import Any

class TooLarge(OverflowError):
    """A time past int64: the file is read in Python instead."""

# (path, total ns, spans, children ns, histogram, rest change or None); histograms as
# [(bucket, count, sum ns), ...]
PathSums = tuple[
    tuple[str, ...],
    int,
    int,
    int,
    list[tuple[int, int, int]],
    list[tuple[int, int, int]] | None,
]

class Nester:
    def __init__(self, held_spans: int, source: str, report: Callable[[str], object]) -> None: ...
    def add_line(self, line: Any) -> bool: ...
    def add_spans(self, spans: list[tuple[str, str, str, str, int, int]]) -> None: ...
    def finish(self) -> tuple[int, int]: ...
    def sums(self, first: int, count: int) -> list[PathSums]: ...
    def roots(self) -> list[tuple[str, int]]: ...
