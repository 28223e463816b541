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
from collections.abc import Mapping

from cutaway.model import (
    Analysis,
    Calibration,
    Caution,
    ExperimentInfo,
    Run,
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
        "results": _hyperfine_results(analysis),
    }
    return _with_probe_parts(document, analysis)


def _with_probe_parts(document: dict[str, JsonValue], analysis: Analysis) -> dict[str, JsonValue]:
    """``document`` with every registered probe's parts (cutaway.probes.plugin
    ``json_parts``), each right after the key it names, in the document or in another probe's
    part (the uprobes probe's follows the spans probe's), parts after one key in the registry's
    order; a part after no known key goes before ``results`` (the last key)."""
    from cutaway.probes.registry import plugins

    parts = [part for plugin in plugins() for part in plugin.json_parts(analysis)]
    known = set(document).union(*(part for _, part in parts))
    placed: dict[str, JsonValue] = {}
    done: set[int] = set()

    def place_part(index: int) -> None:
        if index not in done:
            done.add(index)
            for key, value in parts[index][1].items():
                place(key, value)

    def place(key: str, value: JsonValue) -> None:
        placed[key] = value
        for index, (after, _) in enumerate(parts):
            if after == key:
                place_part(index)

    for key, value in document.items():
        if key == "results":
            for index, (after, _) in enumerate(parts):
                if after not in known:
                    place_part(index)
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
