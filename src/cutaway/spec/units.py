"""Durations and fractions as people write them: ``"10s"``, ``"250ms"``, ``"2m"``, ``"0.5%"``.

Both parsers accept plain numbers too (seconds, fractions) and raise a :class:`SpecError`
without a key (it is a ``ValueError``), whose message ends in "found ..."; callers that know
where the value came from re-raise it with their key.
"""

from __future__ import annotations

import math
import re

from cutaway.spec.errors import SpecError, describe

_SECONDS_PER_UNIT = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "min": 60.0,
    "h": 3600.0,
}
_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zµ]+)?\s*")
_PERCENT = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*%\s*")
_NUMBER = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*")

DURATION_EXPECTED = 'a duration such as "10s", "250ms", "2m" or a number of seconds'
FRACTION_EXPECTED = 'a percentage such as "1%" or a fraction such as 0.01'


def parse_duration(value: object) -> float:
    """Seconds from a number of seconds or a string with a unit (ns, us, ms, s, m/min, h).

    A string without a unit is seconds. Negative, infinite and NaN durations are rejected;
    zero is accepted here (callers that need a positive duration check for it)."""
    seconds = _duration_seconds(value)
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        raise SpecError(f"expected {DURATION_EXPECTED}, found {describe(value)}")
    return seconds


def parse_fraction(value: object) -> float:
    """A fraction from ``"0.5%"`` (0.005), a number (0.01) or a numeric string (``"0.01"``).

    Negative, infinite and NaN values are rejected; callers check their own upper bounds."""
    fraction = _fraction(value)
    if fraction is None or not math.isfinite(fraction) or fraction < 0:
        raise SpecError(f"expected {FRACTION_EXPECTED}, found {describe(value)}")
    return fraction


def _duration_seconds(value: object) -> float | None:
    # bool is an int subclass, and `timeout = true` is a mistake, not one second.
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        return None
    match = _DURATION.fullmatch(value)
    if match is None:
        return None
    number, unit = match.groups()
    if unit is None:
        return float(number)
    per_unit = _SECONDS_PER_UNIT.get(unit)
    return None if per_unit is None else float(number) * per_unit


def _fraction(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        return None
    match = _PERCENT.fullmatch(value)
    if match is not None:
        return float(match.group(1)) / 100.0
    match = _NUMBER.fullmatch(value)
    return None if match is None else float(match.group(1))
