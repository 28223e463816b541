"""The JSON report: everything an Analysis holds, in base units, for programs.

This format is a contract, described field by field in docs/json-format.md. Change it only by
adding fields; anything else needs a new version here and in that document.

Version history:
    1 (2026-11-22): first version.
    2 (2026-11-22): the calls probe: ``probes``, ``calls`` and ``call_comparisons`` (always
        present, empty lists when the probe did not run).
    3 (2026-11-23): ``runs``: per variant, every counted run's status, exit code and values
        of each metric in round order (as hyperfine's ``times``).
    4 (2026-11-24): the profile probe: ``profile_totals``, ``top_functions`` and ``top_stacks``
        (always present, empty lists without profiled runs); weights carry their ``unit``.
    5 (2026-11-24): differential attribution and the instructions probe: ``attribution``,
        ``attribution_totals`` and ``attribution_curve`` (always present, empty lists
        without profiles of two variants); the metric ``instructions`` (unit ``count``) in
        ``summaries`` and ``comparisons`` when instructions were counted.
    6 (2026-11-24): ``profile_phases``: the profile probe's ``phases`` rules, each phase's
        weight per run and share by variant and kind (always present, an empty list without
        rules).
    7 (2026-11-24): load experiments: ``load``, one entry per variant (requests, errors by
        kind, throughput, and per phase ``connect``, ``first_byte``, ``total`` the percentiles
        50, 90, 99, 99.9 and max, corrected and uncorrected; always present, an empty list
        for other experiments); the metrics ``throughput`` (unit ``requests/s``, better
        ``higher``), ``errors``, ``latency_p50`` ... ``latency_max`` and the ``server_*``
        metrics in ``summaries`` and ``comparisons``.
    8 (2026-11-24): the spans probe: ``phases``, the dissection per variant, condition, source
        and phase (time per operation in seconds), and ``phase_comparisons``, each phase's
        metric ``phase:<name>`` against the baseline (always present, empty lists without
        the probe). ``cutaway compare``'s export also fills ``runs`` and ``calls`` of each
        shared variant, tagged with its experiment (they were empty).
    9 (2026-11-27): phases are known by their place in the tree: each phase's metric is
        ``phase:<key>``, its path joined by ``/`` (``phase:do_search/mdb_search/unaccounted``),
        one per row of the dissection, unaccounted rests included (it was ``phase:<name>``,
        one per span name, and ``phase:unaccounted`` for the outermost spans' rest only).
        ``phases`` gain ``key``, ``metric``, ``parent_key``, ``calls_per_operation`` and
        ``calls_per_run`` (the phase's spans, a function's calls there); each of
        ``phase_comparisons`` gains ``key``, ``path``, ``parent``, ``parent_key`` and
        ``unaccounted``. ``function_calls``: the uprobes probe's calls per probed function
        (binary and function) per variant (always present, an empty list without the probe).
    Added since without a version change: ``results`` (2026-11-27), hyperfine's own list, one
        entry per variant with its command and the statistics of its counted, successful
        runs' wall times in seconds (``mean``, ``stddev``, ``median``, ``user``, ``system``,
        ``min``, ``max``, ``times``, ``exit_codes``, and ``parameters`` of a matrix variant),
        so that hyperfine's scripts read cutaway's export unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cutaway.model import (
    Analysis,
    AttributionEntry,
    AttributionPoint,
    AttributionTotal,
    Calibration,
    Caution,
    ExperimentInfo,
    FunctionWeight,
    PhaseWeight,
    ProfileTotal,
    Run,
    StackWeight,
    Summary,
    TimeSeries,
)
from cutaway.report.export_values import comparison_json, json_number
from cutaway.report.hyperfine import hyperfine_results
from cutaway.report.json_version import FORMAT_NAME, FORMAT_VERSION
from cutaway.report.units import metric_unit, run_status_name

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]


def _plain(value: object) -> JsonValue:
    """An environment value as JSON: containers recursively, anything unknown as its str()."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return json_number(value)
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return str(value)


def _experiment(info: ExperimentInfo, calibration: Calibration | None) -> dict[str, JsonValue]:
    return {
        "id": info.id,
        "name": info.name,
        "status": info.status,
        "created_at": json_number(info.created_at),
        "label": info.label,
        "baseline": info.baseline,
        "variants": list(info.variants),
        "versions": {name: info.versions.get(name) for name in info.variants},
        "conditions": [{"name": c.name, "prepare": c.prepare} for c in info.conditions],
        "rounds_completed": int(info.rounds_completed),
        "margin": json_number(info.margin),
        "confidence": json_number(info.confidence),
        "environment": _plain(info.environment),
        "calibration": _calibration(calibration),
    }


def _summary(summary: Summary) -> dict[str, JsonValue]:
    return {
        "variant": summary.variant,
        "metric": summary.metric,
        "unit": metric_unit(summary.metric),
        "n": int(summary.n),
        "total": json_number(summary.total),
        "mean": json_number(summary.mean),
        "median": json_number(summary.median),
        "sd": json_number(summary.sd),
        "min": json_number(summary.min),
        "max": json_number(summary.max),
        "ci_low": json_number(summary.ci_low),
        "ci_high": json_number(summary.ci_high),
    }


def _caution(caution: Caution) -> dict[str, JsonValue]:
    return {
        "kind": caution.kind,
        "message": caution.message,
        "variant": caution.variant,
        "metric": caution.metric,
    }


def _calibration(calibration: Calibration | None) -> JsonValue:
    if calibration is None:
        return None
    return {
        "command": calibration.command,
        "n": int(calibration.n),
        "median_wall_seconds": json_number(calibration.median_wall_seconds),
        "min_wall_seconds": json_number(calibration.min_wall_seconds),
    }


def _runs(runs: tuple[Run, ...]) -> dict[str, JsonValue]:
    """Per variant, parallel lists over its counted runs in round order: round, status, exit
    code, processes left running, and per metric the value (null where the run has none: it
    could not start)."""
    variants: dict[str, list[Run]] = {}
    for run in runs:
        variants.setdefault(run.variant, []).append(run)
    document: dict[str, JsonValue] = {}
    for variant, own in variants.items():
        names = list(dict.fromkeys(name for run in own for name in run.metrics))
        document[variant] = {
            "rounds": [run.round_index for run in own],
            "statuses": [run_status_name(run.status) for run in own],
            "exit_codes": [run.exit_code for run in own],
            "leftover_processes": [run.leftover_processes for run in own],
            "metrics": {
                name: [
                    None if name not in run.metrics else json_number(run.metrics[name])
                    for run in own
                ]
                for name in names
            },
        }
    return document


def report_document(analysis: Analysis) -> dict[str, JsonValue]:
    """The report as a JSON-ready dict (what render_json serializes)."""
    document: dict[str, JsonValue] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "experiments": [
            _experiment(info, analysis.calibration_of(info)) for info in analysis.experiments
        ],
        "summaries": [_summary(summary) for summary in analysis.summaries],
        "comparisons": [comparison_json(comparison) for comparison in analysis.comparisons],
        "cautions": [_caution(caution) for caution in analysis.cautions],
        "calibration": _calibration(analysis.calibration),
        "run_counts": {
            variant: {run_status_name(status): int(count) for status, count in counts.items()}
            for variant, counts in analysis.run_counts.items()
        },
        "probes": list(analysis.probes),
        "runs": _runs(analysis.runs),
        "series": [_series(series) for series in analysis.series],
        "profile_totals": [_profile_total(total) for total in analysis.profile_totals],
        "top_functions": _per_variant(analysis.profile_functions, _function_weight),
        "top_stacks": _per_variant(analysis.profile_stacks, _stack_weight),
        "profile_phases": [_phase_weight(phase) for phase in analysis.profile_phases],
        "attribution": [_attribution(entry) for entry in analysis.attribution],
        "attribution_totals": [_attribution_total(t) for t in analysis.attribution_totals],
        "attribution_curve": [_attribution_point(p) for p in analysis.attribution_curve],
        "results": _hyperfine_results(analysis),
    }
    return _with_probe_parts(document, analysis)


def _with_probe_parts(document: dict[str, JsonValue], analysis: Analysis) -> dict[str, JsonValue]:
    """``document`` with every registered probe's part (cutaway.probes.plugin ``json_part``),
    each after the key its plugin names, in the document or in another probe's part (the
    uprobes probe's follows the spans probe's), else before ``results`` (the last key)."""
    from cutaway.probes.registry import plugins

    parts = [(plugin.json_after, plugin.json_part(analysis)) for plugin in plugins()]
    known = set(document).union(*(part for _, part in parts))
    following: dict[str | None, list[dict[str, JsonValue]]] = {}
    for after, part in parts:
        following.setdefault(after if after in known else None, []).append(part)
    placed: dict[str, JsonValue] = {}

    def place(key: str, value: JsonValue) -> None:
        placed[key] = value
        for part in following.pop(key, []):
            for part_key, part_value in part.items():
                place(part_key, part_value)

    for key, value in document.items():
        if key == "results":
            for part in following.pop(None, []):
                for part_key, part_value in part.items():
                    place(part_key, part_value)
        place(key, value)
    return placed


def _hyperfine_results(analysis: Analysis) -> list[JsonValue]:
    """hyperfine's ``results`` (report/hyperfine.py), its fields in its order."""
    results: list[JsonValue] = []
    for result in hyperfine_results(analysis):
        entry: dict[str, JsonValue] = {
            "command": result.command,
            "name": result.name,
            "mean": _optional_number(result.mean),
            "stddev": _optional_number(result.stddev),
            "median": _optional_number(result.median),
            "user": _optional_number(result.user),
            "system": _optional_number(result.system),
            "min": json_number(min(result.times)) if result.times else None,
            "max": json_number(max(result.times)) if result.times else None,
            "times": [json_number(t) for t in result.times],
            "exit_codes": list(result.exit_codes),
        }
        if result.parameters:
            entry["parameters"] = dict(result.parameters)
        results.append(entry)
    return results


def _optional_number(value: float | None) -> float | None:
    return None if value is None else json_number(value)


def _attribution(entry: AttributionEntry) -> dict[str, JsonValue]:
    return {
        "variant": entry.variant,
        "baseline": entry.baseline,
        "profile": entry.what,
        "function": entry.function,
        "kind": entry.kind,
        "unit": entry.unit,
        "baseline_value": json_number(entry.baseline_value),
        "variant_value": json_number(entry.variant_value),
        "delta": json_number(entry.delta),
        "ci_low": json_number(entry.ci_low),
        "ci_high": json_number(entry.ci_high),
        "rounds": int(entry.rounds),
        "share": _optional_number(entry.share),
        "beyond_noise": entry.beyond_noise,
    }


def _attribution_total(total: AttributionTotal) -> dict[str, JsonValue]:
    return {
        "variant": total.variant,
        "baseline": total.baseline,
        "profile": total.what,
        "unit": total.unit,
        "rounds": int(total.rounds),
        "profile_delta": json_number(total.profile_delta),
        "profile_ci_low": json_number(total.profile_ci_low),
        "profile_ci_high": json_number(total.profile_ci_high),
        "baseline_total": json_number(total.baseline_total),
        "measured_metric": total.measured_metric,
        "measured_delta": _optional_number(total.measured_delta),
        "measured_ci_low": _optional_number(total.measured_ci_low),
        "measured_ci_high": _optional_number(total.measured_ci_high),
        "functions": int(total.functions),
        "listed": int(total.listed),
        "listed_delta": json_number(total.listed_delta),
        "beyond_noise": int(total.beyond_noise),
        "within_noise": int(total.within_noise),
        "baseline_only": int(total.baseline_only),
        "variant_only": int(total.variant_only),
    }


def _attribution_point(point: AttributionPoint) -> dict[str, JsonValue]:
    return {
        "variant": point.variant,
        "profile": point.what,
        "unit": point.unit,
        "functions": int(point.functions),
        "cumulative_delta": json_number(point.cumulative_delta),
        "share": _optional_number(point.share),
    }


def _profile_total(total: ProfileTotal) -> dict[str, JsonValue]:
    return {
        "variant": total.variant,
        "kind": total.what,
        "unit": total.unit,
        "runs": int(total.runs),
        "per_run": json_number(total.per_run),
        "events_per_run": json_number(total.events_per_run),
        "profiled_wall_median": None
        if total.profiled_wall is None
        else json_number(total.profiled_wall),
        "timed_wall_median": None if total.timed_wall is None else json_number(total.timed_wall),
    }


def _function_weight(weight: FunctionWeight) -> dict[str, JsonValue]:
    return {
        "kind": weight.what,
        "function": weight.function,
        "unit": weight.unit,
        "self": json_number(weight.self_value),
        "inclusive": json_number(weight.inclusive_value),
        "self_share": json_number(weight.self_share),
        "inclusive_share": json_number(weight.inclusive_share),
    }


def _phase_weight(weight: PhaseWeight) -> dict[str, JsonValue]:
    return {
        "variant": weight.variant,
        "kind": weight.what,
        "phase": weight.phase,
        "unit": weight.unit,
        "per_run": json_number(weight.per_run),
        "share": json_number(weight.share),
    }


def _stack_weight(weight: StackWeight) -> dict[str, JsonValue]:
    return {
        "kind": weight.what,
        "frames": list[JsonValue](weight.stack.split(";")),
        "unit": weight.unit,
        "value": json_number(weight.value),
        "share": json_number(weight.share),
    }


def _per_variant(
    items: Sequence[FunctionWeight] | Sequence[StackWeight],
    convert: Callable[[Any], dict[str, JsonValue]],
) -> list[JsonValue]:
    """[{"variant": name, "entries": [...]}, ...] in the variants' order of appearance."""
    grouped: dict[str, list[JsonValue]] = {}
    for item in items:
        grouped.setdefault(item.variant, []).append(convert(item))
    return [{"variant": variant, "entries": entries} for variant, entries in grouped.items()]


def _series(series: TimeSeries) -> dict[str, JsonValue]:
    return {
        "variant": series.variant,
        "round": series.round_index,
        "metric": series.metric,
        "unit": series.unit,
        "t_seconds": [json_number(t) for t in series.times],
        "values": [json_number(v) for v in series.values],
    }


def render_json(analysis: Analysis) -> str:
    """The JSON report, indented by 2, ending with a newline. Keys keep the documented order
    and lists keep the Analysis order, so the same Analysis always gives the same text."""
    # allow_nan=False proves no NaN slipped past _number: json.dumps would raise.
    text = json.dumps(report_document(analysis), indent=2, ensure_ascii=False, allow_nan=False)
    return text + "\n"
