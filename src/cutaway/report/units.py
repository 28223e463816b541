"""Values as humans read them: seconds, bytes and counts scaled to a readable unit, ratios as a
percentage change, and the few facts about metrics (unit, report order) and run statuses (name)
that every format needs.

Machine formats (JSON, CSV) never use these: they carry base units at full precision."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from cutaway.model import PROCESS_METRICS, Metric, RunStatus

NOT_AVAILABLE = "n/a"  # what a human report shows for NaN or infinity (n = 1, zero baseline)
SIGNIFICANT_DIGITS = 3

_SECONDS_SCALES: tuple[tuple[float, str], ...] = (
    (1.0, "s"),
    (1e-3, "ms"),
    (1e-6, "µs"),
    (1e-9, "ns"),
)
_BYTES_SCALES: tuple[tuple[float, str], ...] = (
    (1024.0**4, "TiB"),
    (1024.0**3, "GiB"),
    (1024.0**2, "MiB"),
    (1024.0, "KiB"),
)
_SCALES: dict[str, tuple[tuple[float, str], ...]] = {
    "seconds": _SECONDS_SCALES,
    "bytes": (*_BYTES_SCALES, (1.0, "B")),
}
COLUMN_MAX_DIGITS = 10_000  # a column whose largest value reads 10,000 or more takes a larger unit
_METRIC_POSITION = {metric.name: position for position, metric in enumerate(PROCESS_METRICS)}


def metric_unit(metric: str) -> str | None:
    """The unit of a metric known to this version of cutaway (a process metric or a registered
    probe's: cutaway.probes.core.known_metrics), None for one it does not know."""
    known = known_metric(metric)
    return known.unit if known is not None else None


def known_metric(name: str) -> Metric | None:
    """The metric called ``name`` that cutaway or a registered probe measures, None for none:
    what a report knows of a stored metric's name alone."""
    from cutaway.probes.core import known_metrics

    return known_metrics().get(name)


def metric_sort_key(metric: str) -> tuple[int, str]:
    """Sort key putting metrics in PROCESS_METRICS order (wall first), unknown ones after it."""
    return (_METRIC_POSITION.get(metric, len(_METRIC_POSITION)), metric)


def run_status_name(status: str) -> str:
    """The name of a run status as reports spell it ("ok", "failed"). A RunStatus is a str, but
    str() and f-strings of it give "RunStatus.OK": its value is the name."""
    return status.value if isinstance(status, RunStatus) else status


def _significant(value: float) -> str:
    """``value`` with SIGNIFICANT_DIGITS significant digits, but never in exponent notation and
    never dropping integer digits (1234.5 is "1235", not "1.23e+03")."""
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, SIGNIFICANT_DIGITS - 1 - magnitude)
    rounded = round(value, decimals)
    # 9.996 rounds up to 10.00, one digit too many: drop a decimal when rounding adds a digit.
    if rounded != 0 and math.floor(math.log10(abs(rounded))) > magnitude:
        decimals = max(0, decimals - 1)
    return f"{value:.{decimals}f}"


def format_seconds(seconds: float) -> str:
    """Seconds auto-scaled to s, ms, µs or ns with 3 significant digits: "612 µs", "2.14 s"."""
    if not math.isfinite(seconds):
        return NOT_AVAILABLE
    if seconds == 0:
        return "0 s"
    for index, (scale, symbol) in enumerate(_SECONDS_SCALES):
        if abs(seconds) >= scale or index == len(_SECONDS_SCALES) - 1:
            text = _significant(seconds / scale)
            # 0.99996 s rounds to "1000 ms": say "1.00 s" instead.
            if index > 0 and abs(float(text)) >= 1000:
                larger_scale, larger_symbol = _SECONDS_SCALES[index - 1]
                return f"{_significant(seconds / larger_scale)} {larger_symbol}"
            return f"{text} {symbol}"
    raise AssertionError("unreachable: the last scale always matches")


def format_bytes(size_bytes: float) -> str:
    """Bytes in binary units with 3 significant digits: "512 B", "1.50 KiB", "3.52 MiB"."""
    if not math.isfinite(size_bytes):
        return NOT_AVAILABLE
    for scale, symbol in _BYTES_SCALES:
        if abs(size_bytes) >= scale:
            return f"{_significant(size_bytes / scale)} {symbol}"
    return f"{size_bytes:.0f} B"


def format_count(count: float, *, fractional: bool = False) -> str:
    """A count with thousands separators: an integer ("12,345"), or with one decimal when
    ``fractional`` (means, medians and deviations of counts: "12,345.5")."""
    if not math.isfinite(count):
        return NOT_AVAILABLE
    return f"{count:,.1f}" if fractional else f"{count:,.0f}"


def format_value(value: float, unit: str | None, *, fractional: bool = False) -> str:
    """A metric value in its unit, for humans. ``fractional`` marks statistics that are not
    whole counts (mean, median, sd); it matters only for counts."""
    if unit == "seconds":
        return format_seconds(value)
    if unit == "bytes":
        return format_bytes(value)
    if unit == "count":
        return format_count(value, fractional=fractional)
    return NOT_AVAILABLE if not math.isfinite(value) else _significant(value)


def format_percent(percent: float, *, signed: bool = True) -> str:
    """A percentage with two decimals below 10 %, one below 100 %, none above: "+1.23 %"
    ("1.23 %" unless ``signed``), "-40.1 %", "+761 %". One that rounds to zero is "0.00 %": no
    sign, as no direction is visible."""
    if not math.isfinite(percent):
        return NOT_AVAILABLE
    decimals = 2 if abs(percent) < 9.995 else 1 if abs(percent) < 99.95 else 0
    text = f"{abs(percent):.{decimals}f}"
    if text == "0.00":
        return "0.00 %"
    if percent < 0:
        return f"-{text} %"
    return f"+{text} %" if signed else f"{text} %"


def format_change(ratio: float) -> str:
    """A ratio (variant / baseline) as a percentage change: 1.0123 is "+1.23 %", 0.996 is
    "-0.40 %"."""
    return format_percent((ratio - 1.0) * 100.0)


def format_change_interval(ratio_low: float, ratio_high: float) -> str:
    """A confidence interval of a ratio as changes: "[+0.61 %, +1.44 %]"."""
    return f"[{format_change(ratio_low)}, {format_change(ratio_high)}]"


def format_ratio(ratio: float) -> str:
    """A ratio as a factor with four decimals: "1.0123x"."""
    return NOT_AVAILABLE if not math.isfinite(ratio) else f"{ratio:.4f}x"


def format_confidence(confidence: float) -> str:
    """A confidence level as a percentage: 0.95 is "95 %", 0.999 is "99.9 %"."""
    return f"{confidence * 100:g} %"


def format_margin(margin: float) -> str:
    """An equivalence margin (a fraction) as "±1.00 %"."""
    return f"±{margin * 100:.2f} %"


def format_quantity(count: int, noun: str) -> str:
    """A count with its noun, singular for one: "1 round", "30 rounds"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def column_scale(values: Sequence[float], unit: str | None) -> tuple[float, str] | None:
    """One unit for a whole column of ``unit`` values: the unit of its smallest non-zero
    value, or a larger one when the largest value would read 10,000 or more in it (so a
    column reads "3,600 µs" over "44.9 µs"). None for a unit without scales (counts, the
    user's own units)."""
    scales = _SCALES.get(unit or "")
    magnitudes = sorted(abs(v) for v in values if math.isfinite(v) and v != 0)
    if scales is None:
        return None
    if not magnitudes:
        return scales[-1] if unit == "bytes" else scales[0]
    smallest, largest = magnitudes[0], magnitudes[-1]
    index = next((i for i, (scale, _) in enumerate(scales) if smallest >= scale), len(scales) - 1)
    while index > 0 and largest / scales[index][0] >= COLUMN_MAX_DIGITS:
        index -= 1
    return scales[index]


def format_scaled(value: float, scale: tuple[float, str]) -> str:
    """``value`` as a number in the unit ``scale`` names, 3 significant digits: "0.677"."""
    if not math.isfinite(value):
        return NOT_AVAILABLE
    if value == 0:
        return "0"
    text = _significant(abs(value) / scale[0])
    whole, dot, decimals = text.partition(".")
    return f"{'-' if value < 0 else ''}{int(whole):,}{dot}{decimals}"


def format_column(
    cells: Sequence[tuple[float, bool]], unit: str | None, scale_with: Sequence[float] = ()
) -> tuple[list[str], str]:
    """A column of (value, fractional) as numbers in one unit chosen from its values (and
    ``scale_with``: those of other columns that must read in the same unit), and that unit's
    symbol for the column's header: (["1.34", "0.677"], "ms"), never "677 µs" under "1.34 ms".
    Counts have no symbol; the user's own units are given as they are."""
    scale = column_scale([*(value for value, _ in cells), *scale_with], unit)
    if scale is not None:
        return [format_scaled(value, scale) for value, _ in cells], scale[1]
    if unit == "count":
        # A decimal only where one of the column's statistics has a fraction: a median of
        # counts that are all the same (instructions) reads "42,123,169", not "42,123,169.0".
        fractions = any(f and math.isfinite(v) and not v.is_integer() for v, f in cells)
        return [format_count(value, fractional=fractions) for value, _ in cells], ""
    return [format_value(value, None) for value, _ in cells], unit or ""


def axis_scale(values: Iterable[float], unit: str) -> tuple[float, str]:
    """One divisor and symbol for a chart's value axis: (1e-3, "ms") for seconds in the
    milliseconds; counts have no symbol, the user's own units are shown as given. Only the
    smallest and largest finite, non-zero magnitudes matter."""
    magnitudes = [abs(float(v)) for v in values if math.isfinite(v) and v != 0]
    extremes = [min(magnitudes), max(magnitudes)] if magnitudes else []
    scale = column_scale(extremes, unit or None)
    if scale is not None:
        return scale
    return 1.0, "" if unit == "count" else unit
