"""From stored per-call records to per-function latency by call position, and comparisons.

Seed 000's table: for each variant and function, the first calls of each process, the second
calls, and the later ones, each with n, total, mean, median, sd, min and max. The comparison of
a variant with the baseline keeps the round as the unit, as for whole runs: per round, the mean
duration of that function's calls at that position in each variant's run, then the paired
ratio over rounds. One variant's call comparisons form one Holm family."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import numpy as np
import numpy.typing as npt

from cutaway.model import (
    CALL_POSITIONS,
    PERCENTILE_GRID,
    CallPercentiles,
    CallSummary,
    Caution,
    Comparison,
    Spec,
)
from cutaway.probes.calls.capture import KIND, LOSSES_KIND, decode_calls
from cutaway.probes.calls.settings import call_functions
from cutaway.probes.timed_calls import SYSCALLS_KIND, CallsBlobError, NewerCallsBlobError
from cutaway.stats import describe, paired_ratio, trim_for
from cutaway.stats.descriptive import percentile_curve
from cutaway.store import DamagedStoreError, Store, StoreError
from cutaway.verdicts import Row, judge

Durations = npt.NDArray[np.float64]


def _position_masks(call_index: npt.NDArray[np.integer[Any]]) -> dict[str, npt.NDArray[np.bool_]]:
    return {"1": call_index == 1, "2": call_index == 2, "later": call_index > 2}


def syscall_label(name: str) -> str:
    """How a system call timed by strace is named in reports, apart from the libc function of
    the same name that the calls probe times."""
    return f"{name} (syscall)"


def timed_functions(spec: Spec) -> list[str]:
    """Every function the experiment's probes time, in report order: libc calls, then syscalls."""
    # The syscalls probe stores its calls as this probe's records (CALL_RECORDS); its names
    # are the list under its key, read here without importing it.
    syscalls = spec.probes.setting("syscalls") or []
    assert isinstance(syscalls, list | tuple)
    return [*call_functions(spec.probes), *(syscall_label(str(name)) for name in syscalls)]


def load_calls(
    store: Store, experiment_id: int
) -> dict[tuple[str, str, str], dict[int, Durations]]:
    """(variant, function, position) -> round -> durations in seconds, with position "all" too,
    from both probes that record calls (the interposer's and strace's)."""
    loaded: dict[tuple[str, str, str], dict[int, Durations]] = defaultdict(dict)
    for kind, label in ((KIND, str), (SYSCALLS_KIND, syscall_label)):
        for item in store.run_data(experiment_id, kind):
            where = f"{item.variant!r} round {item.round_index}, {kind} of {item.key}"
            try:
                calls = decode_calls(item.data)
            except NewerCallsBlobError as error:  # not damaged: this cutaway is too old
                raise StoreError(f"cannot read the calls of {where}: {error}") from None
            except CallsBlobError as error:
                raise DamagedStoreError(
                    store.location, experiment_id, "run_data.data", f"{where}: {error}"
                ) from None
            if len(calls) != item.count:
                raise DamagedStoreError(
                    store.location,
                    experiment_id,
                    "run_data.count",
                    f"{where}: {item.count} calls, but the blob holds {len(calls)}",
                )
            # One pass: the stored integers (of any width) straight to float seconds.
            seconds = np.divide(calls.duration_ns, 1e9, dtype=np.float64)
            function = label(item.key)
            loaded[(item.variant, function, "all")][item.round_index] = seconds
            for position, mask in _position_masks(calls.call_index).items():
                if mask.any():
                    loaded[(item.variant, function, position)][item.round_index] = seconds[mask]
    return loaded


def call_summaries(
    loaded: dict[tuple[str, str, str], dict[int, Durations]], spec: Spec
) -> list[CallSummary]:
    """One summary per variant, function and position (and "all"), in spec and catalog order."""
    summaries = []
    for variant, function, position in call_summaries_order(loaded, spec):
        rounds = list(loaded[(variant, function, position)].values())
        values = rounds[0] if len(rounds) == 1 else np.concatenate(rounds)
        # The median and p99 from one partial sort of the (maybe ten million) durations.
        d = describe(values, spec.confidence, percentiles=(99,))
        (p99,) = d.percentiles
        summaries.append(
            CallSummary(
                variant, function, position, d.n, d.total, d.mean, d.median, d.sd, d.min, d.max, p99
            )
        )
    return summaries


def call_percentile_curves(
    loaded: dict[tuple[str, str, str], dict[int, Durations]], spec: Spec
) -> list[CallPercentiles]:
    """The percentile curve of every (variant, function, position) that call_summaries
    describes, in the same order: at most len(PERCENTILE_GRID) points each."""
    curves = []
    for summary in call_summaries_order(loaded, spec):
        rounds = list(loaded[summary].values())
        values = rounds[0] if len(rounds) == 1 else np.concatenate(rounds)
        percentiles, seconds = percentile_curve(values, PERCENTILE_GRID)
        curves.append(CallPercentiles(*summary, percentiles, seconds))
    return curves


def call_summaries_order(
    loaded: dict[tuple[str, str, str], dict[int, Durations]], spec: Spec
) -> list[tuple[str, str, str]]:
    """(variant, function, position) in spec and catalog order: functions as the spec lists
    them, then variants, then positions (first, second, later, all)."""
    functions = timed_functions(spec)
    order = {name: i for i, name in enumerate(v.name for v in spec.variants)}
    positions = {p: i for i, p in enumerate((*CALL_POSITIONS, "all"))}
    return sorted(
        loaded,
        key=lambda k: (
            functions.index(k[1]) if k[1] in functions else 99,
            order.get(k[0], 99),
            positions[k[2]],
        ),
    )


def losses_cautions(store: Store, experiment_id: int) -> list[Caution]:
    """Say so when call records were lost (a process killed mid-record leaves a partial record,
    a record that could not be written is counted as dropped), and when runs had no process
    the interposer could enter at all: the loader ignores LD_PRELOAD for setuid and setgid
    programs, and static binaries have no libc calls to interpose."""
    truncated = dropped = unseen = unstarted = 0
    for item in store.run_data(experiment_id, LOSSES_KIND):
        losses = _losses(item.data)
        if losses is None:
            raise DamagedStoreError(
                store.location,
                experiment_id,
                "run_data.data",
                f"{item.variant!r} round {item.round_index}, the calls probe's losses: "
                f"{item.data[:60]!r} is not a JSON object of counts",
            )
        truncated += losses.get("truncated_bytes", 0)
        dropped += losses.get("dropped", 0)
        unseen += losses.get("processes", 0) == 0 and losses.get("unstarted", 0) == 0
        unstarted += losses.get("unstarted", 0)
    cautions = []
    if truncated or dropped:
        message = (
            f"the calls probe lost records: {dropped} calls could not be recorded and "
            f"{truncated} bytes were cut off mid-record (a process killed while writing); "
            "the tables count only whole records"
        )
        cautions.append(Caution("calls-lost", message))
    if unstarted:
        message = (
            f"{unstarted} processes were killed while creating their call file (an interrupt "
            "or a timeout), before they recorded a call"
        )
        cautions.append(Caution("calls-unstarted", message))
    if unseen:
        message = (
            f"in {unseen} runs the calls probe entered no process: setuid/setgid programs "
            "ignore LD_PRELOAD and static ones have no libc calls to time; the syscalls probe "
            "(strace) sees both"
        )
        cautions.append(Caution("calls-unseen", message))
    return cautions


def _losses(data: bytes) -> dict[str, int] | None:
    """The calls probe's losses of one run (capture.py writes them), None if damaged."""
    try:
        losses = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(losses, dict):
        return None
    keys = ("truncated_bytes", "dropped", "processes", "unstarted")
    counts = {key: losses.get(key, 0) for key in keys}
    valid = all(
        isinstance(count, int) and not isinstance(count, bool) and count >= 0
        for count in counts.values()
    )
    return counts if valid else None


def _paired_means(
    base: dict[int, Durations], other: dict[int, Durations]
) -> tuple[Durations, Durations]:
    rounds = sorted(set(base) & set(other))
    return (
        np.array([base[r].mean() for r in rounds], dtype=np.float64),
        np.array([other[r].mean() for r in rounds], dtype=np.float64),
    )


def call_comparisons(
    loaded: dict[tuple[str, str, str], dict[int, Durations]], spec: Spec, resamples: int
) -> list[Comparison]:
    """Each variant against the baseline, per function and position, Holm-adjusted per variant."""
    comparisons: list[Comparison] = []
    for variant in (v.name for v in spec.variants if v.name != spec.baseline):
        rows: list[Row] = []
        for function in timed_functions(spec):
            for position in CALL_POSITIONS:
                base = loaded.get((spec.baseline, function, position))
                other = loaded.get((variant, function, position))
                if not base or not other:
                    continue
                a, b = _paired_means(base, other)
                estimate = paired_ratio(
                    a, b, confidence=spec.confidence, resamples=resamples, seed=spec.seed,
                    trim=trim_for(spec.estimator),
                )  # fmt: skip
                if estimate is not None:
                    metric = f"calls.{function}.{position}"
                    rows.append(Row(metric, spec.baseline, variant, len(a), estimate))
        comparisons += judge(rows, spec.margin, spec.confidence, primary=None)
    return comparisons
