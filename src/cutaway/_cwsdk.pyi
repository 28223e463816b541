"""cutaway._cwsdk (native/cw_sdk_python.c): the span SDK reader's native nester and counter."""

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from cutaway._cwotlp import PathSums

Column = npt.NDArray[np.int64]

class Nester:
    def __init__(
        self,
        pid: int,
        span_kind: int,
        begin_kind: int,
        end_kind: int,
        report: Callable[[int, str | None, int], object],
    ) -> None: ...
    def add(
        self,
        kinds: Column,
        threads: Column,
        levels: Column,
        names: Column,
        begin_ns: Column,
        end_ns: Column,
        texts: list[str],
    ) -> None: ...
    def finish(self) -> None: ...
    def sums(self, first: int, count: int) -> list[PathSums]: ...
    def roots(self) -> list[tuple[str, int]]: ...
