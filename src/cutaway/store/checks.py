"""What is read from the store is checked where rows become value objects.

SQLite keeps any type in any column (a hand edit can put ``'fast'`` in a REAL column) and a
JSON column holds whatever was written into it. A store edited by hand or damaged must give one
clear message naming the experiment, the table and column and the problem, never a traceback
from deep in the analysis: every reader of the store goes through these checks, and each
failure is a :class:`DamagedStoreError`."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cutaway.store.schema import StoreError
from cutaway.value_class import value_class

# Metrics that may be below zero: a phase's unaccounted time is negative where its sub-phases
# overlap (probes/phase_tables.py). Every other metric is a cost (a time, a size, a count), and
# a negative one is a damaged store: the statistics take logarithms of them.
SIGNED_METRICS = frozenset({"phase:unaccounted"})


# The magnitudes a stored measurement may have, zero aside. What cutaway measures (seconds,
# bytes, counts) lies far inside; beyond, the statistics overflow (a variance squares values, a
# ratio divides by them), which the analysis would meet as numpy warnings and infinities.
LARGEST_MEASUREMENT = 1e18
SMALLEST_MEASUREMENT = 1e-30
# The last second of the year 9999 (Unix seconds): the latest time a stored experiment may name.
LATEST_INSTANT = 253_402_300_799.0


def metric_minimum(metric: str) -> float | None:
    """The least value a stored measurement of ``metric`` may hold (None: no bound)."""
    return None if metric in SIGNED_METRICS else 0.0


def measurement_problem(value: float, metric: str) -> str | None:
    """What is wrong with a finite stored value of ``metric``, in words, or None."""
    minimum = metric_minimum(metric)
    if minimum is not None and value < minimum:
        return f"{value:g} is negative, and {metric} cannot be"
    if abs(value) > LARGEST_MEASUREMENT:
        return f"{value:g} is beyond any measurement (at most {LARGEST_MEASUREMENT:g})"
    if value != 0 and abs(value) < SMALLEST_MEASUREMENT:
        return f"{value:g} is nearer zero than any measurement (at least {SMALLEST_MEASUREMENT:g})"
    return None


class StoredRecordError(ValueError):
    """A record a probe stored (run_data.data) that it cannot read back: damaged, or written by
    another version. Bad input, as a damaged store is; each probe's record format raises its
    own subclass, so that the command line names none of them."""


class DamagedStoreError(StoreError):
    """A stored value that cannot be what cutaway wrote there: the store was edited or damaged.
    Nothing is changed; the message names the experiment, the column and the problem."""

    def __init__(
        self, path: Path | str, experiment_id: int | None, column: str, problem: str
    ) -> None:
        self.path = path
        self.experiment_id = experiment_id
        self.column = column  # "table.column"
        self.problem = problem
        which = "" if experiment_id is None else f"experiment #{experiment_id} in "
        super().__init__(
            f"{which}{path} is damaged: {column}: {problem} "
            "(the store was edited by hand or corrupted; cutaway changed nothing)"
        )


def describe(value: object) -> str:
    """A stored value as the message shows it, its type and at most 60 characters of it."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"a blob of {len(value)} bytes"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    kinds = {bool: "boolean", int: "integer", float: "number", str: "text"}
    kind = {list: "array", dict: "object", **kinds}.get(type(value))
    return f"{kind} {text}" if kind else f"{type(value).__name__} {text}"


@value_class
class Columns:
    """The columns of one experiment's rows: each method returns the value typed, or raises
    DamagedStoreError naming ``table.column`` (and ``where``, the row, when given)."""

    path: Path | str  # the store as messages name it (Store.location)
    experiment_id: int | None

    def damaged(self, column: str, problem: str, where: str = "") -> DamagedStoreError:
        return DamagedStoreError(
            self.path, self.experiment_id, column, f"{where}: {problem}" if where else problem
        )

    def integer(
        self, column: str, value: object, *, minimum: int | None = None, where: str = ""
    ) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.damaged(column, f"{describe(value)} is not an integer", where)
        if minimum is not None and value < minimum:
            raise self.damaged(column, f"{value} is below {minimum}", where)
        return value

    def optional_integer(self, column: str, value: object, where: str = "") -> int | None:
        return None if value is None else self.integer(column, value, where=where)

    def real(
        self, column: str, value: object, *, minimum: float | None = None, where: str = ""
    ) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise self.damaged(column, f"{describe(value)} is not a number", where)
        if math.isinf(value):  # SQLite keeps 9e999 as infinity; nothing cutaway writes is
            raise self.damaged(column, f"{value} is not a finite number", where)
        if minimum is not None and value < minimum:
            raise self.damaged(column, f"{value:g} is below {minimum:g}", where)
        return float(value)

    def measurement(self, column: str, value: object, metric: str, where: str = "") -> float:
        """A measured value of ``metric``: a finite number in the range of measurements."""
        number = self.real(column, value, where=where)
        problem = measurement_problem(number, metric)
        if problem is not None:
            raise self.damaged(column, problem, where)
        return number

    def instant(self, column: str, value: object, where: str = "") -> float:
        """A time cutaway wrote (Unix seconds): from 1970 to the year 9999, as dates are shown
        (a created_at of 1e300 stopped `cutaway publish` with a traceback)."""
        seconds = self.real(column, value, where=where)
        if not 0 <= seconds <= LATEST_INSTANT:
            raise self.damaged(column, f"{seconds:g} is not a time from 1970 to 9999", where)
        return seconds

    def optional_instant(self, column: str, value: object, where: str = "") -> float | None:
        return None if value is None else self.instant(column, value, where=where)

    def optional_real(self, column: str, value: object, where: str = "") -> float | None:
        return None if value is None else self.real(column, value, where=where)

    def text(self, column: str, value: object, where: str = "") -> str:
        if not isinstance(value, str):
            raise self.damaged(column, f"{describe(value)} is not text", where)
        return value

    def optional_text(self, column: str, value: object, where: str = "") -> str | None:
        return None if value is None else self.text(column, value, where=where)

    def choice(self, column: str, value: object, allowed: Sequence[str], where: str = "") -> str:
        if not isinstance(value, str) or value not in allowed:
            raise self.damaged(
                column, f"{describe(value)} is not one of {', '.join(allowed)}", where
            )
        return value

    def blob(self, column: str, value: object, where: str = "") -> bytes:
        if not isinstance(value, bytes):
            raise self.damaged(column, f"{describe(value)} is not a blob", where)
        return value

    def json_strings(self, column: str, value: object, where: str = "") -> tuple[str, ...]:
        """A JSON column that must hold an array of strings."""
        text = self.text(column, value, where)
        try:
            found = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise self.damaged(column, f"not JSON ({error})", where) from None
        if not isinstance(found, list) or not all(isinstance(item, str) for item in found):
            raise self.damaged(column, "not a JSON array of strings", where)
        return tuple(found)

    def json_object(self, column: str, value: object, where: str = "") -> dict[str, Any]:
        """A JSON column that must hold an object."""
        text = self.text(column, value, where)
        try:
            found = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise self.damaged(column, f"not JSON ({error})", where) from None
        if not isinstance(found, dict):
            raise self.damaged(column, f"JSON {_json_kind(found)}, not an object", where)
        return found


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return "number"
