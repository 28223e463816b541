"""Stored profiles -> what the report shows: per variant and kind (on-CPU, off-CPU, later
instructions), the mean per profiled run of each function's self and inclusive weight, and of
each whole stack.

Weights are averaged over the variant's profiled runs (a run that saw nothing of a kind counts
as zero), so a number reads "per run", like the timed metrics. Time is reported in seconds
(stored in nanoseconds), counts in their own unit. The root frame of a folded stack is the
process name: it is kept in stacks, never listed as a function."""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cutaway.model import (
    TIMED,
    FunctionWeight,
    PhaseWeight,
    ProfileTotal,
    Run,
    StackWeight,
)
from cutaway.probes.profile import records
from cutaway.probes.profile.settings import PhaseRule
from cutaway.probes.stacks import KIND_ORDER as KIND_ORDER
from cutaway.probes.stacks import blocking_leaf as blocking_leaf
from cutaway.probes.stacks import function_name as function_name
from cutaway.probes.stacks import function_weights as function_weights
from cutaway.probes.stacks import report_unit as report_unit
from cutaway.store import Store

# (variant, round index, profile) of one profiled run.
RoundProfile = tuple[str, int, records.Profile]

TOP_FUNCTIONS = 15  # seed 002's charts: the top 15 functions of each run, side by side
TOP_STACKS = 5  # seed 004: trunc(@s, 5), the top five stacks


@dataclass(frozen=True)
class ProfileAnalysis:
    totals: tuple[ProfileTotal, ...]
    functions: tuple[FunctionWeight, ...]
    stacks: tuple[StackWeight, ...]
    phases: tuple[PhaseWeight, ...] = ()


def _scale(unit: str) -> float:
    return 1e-9 if unit == records.NANOSECONDS else 1.0


@dataclass
class _Merged:
    """A variant's profiles of one kind summed over its runs."""

    unit: str
    runs: int = 0
    events: int = 0
    stacks: dict[str, int] | None = None


def merge_profiles(
    profiles: Iterable[tuple[str, records.Profile]],
) -> dict[tuple[str, str], _Merged]:
    """(variant, profile) pairs -> per (variant, what) the summed stacks and the run count."""
    merged: dict[tuple[str, str], _Merged] = {}
    for variant, profile in profiles:
        entry = merged.setdefault((variant, profile.what), _Merged(profile.unit, stacks={}))
        assert entry.stacks is not None
        entry.runs += 1
        entry.events += profile.events
        for stack, weight in profile.stacks.items():
            entry.stacks[stack] = entry.stacks.get(stack, 0) + weight
    return merged


KERNEL_MARK = "_[k]"  # perf's mark on a kernel frame, as folded (profile.fold)


def passes_through(stack: str, functions: frozenset[str]) -> bool:
    """Whether a folded stack has a frame (the root, the process name, is not one) that is one
    of ``functions``, a kernel frame matching with or without its ``_[k]`` mark."""
    return any(
        frame in functions or frame.removesuffix(KERNEL_MARK) in functions
        for frame in stack.split(";")[1:]
    )


def only_under(stored: Sequence[RoundProfile], functions: Sequence[str]) -> list[RoundProfile]:
    """The profiles with only the stacks that pass through one of ``functions`` (the probe's
    ``under`` setting): seed 002's question, which kernel functions the time inside a system
    call went to, asks for the stacks under its kernel entry (``do_fsync``) and no others.
    The stacks are kept whole, user frames and all, so the tables show who made the call."""
    wanted = frozenset(functions)
    return [
        (
            variant,
            round_index,
            dataclasses.replace(
                profile,
                stacks={
                    stack: weight
                    for stack, weight in profile.stacks.items()
                    if passes_through(stack, wanted)
                },
            ),
        )
        for variant, round_index, profile in stored
    ]


def only_processes(stored: Sequence[RoundProfile], names: Sequence[str]) -> list[RoundProfile]:
    """The profiles with only the stacks of these processes (the name at a folded stack's
    root): a system-wide profile of a shared machine narrowed to the server, so that its
    tables, flame graphs and attribution are the server's, not every process's noise."""
    wanted = frozenset(names)
    return [
        (
            variant,
            round_index,
            dataclasses.replace(
                profile,
                stacks={
                    stack: weight
                    for stack, weight in profile.stacks.items()
                    if stack.split(";", 1)[0] in wanted
                },
            ),
        )
        for variant, round_index, profile in stored
    ]


OTHER_PHASE = "other"  # the phase of a sample no rule matches (profile.settings.OTHER_PHASE)


def phase_weights(stacks: Mapping[str, int], rules: Sequence[PhaseRule]) -> dict[str, int]:
    """Each phase's weight, every rule's phase and "other" present: a stack goes to the rule
    matching its innermost frame that any rule matches (searching from the leaf toward the
    root, so a nested phase wins over the one around it), the first such rule in file order
    when several match that frame; to "other" when none matches. The root (the process name)
    is not a frame."""
    patterns = [(rule.name, re.compile(rule.frames)) for rule in rules]
    found: dict[str, str | None] = {}  # frame -> its phase, each frame tested once

    def phase_of_frame(frame: str) -> str | None:
        if frame not in found:
            found[frame] = next((name for name, rx in patterns if rx.search(frame)), None)
        return found[frame]

    weights = dict.fromkeys([*(rule.name for rule in rules), OTHER_PHASE], 0)
    for stack, weight in stacks.items():
        frames = stack.split(";")[1:]
        phase = next(
            (p for p in map(phase_of_frame, reversed(frames)) if p is not None), OTHER_PHASE
        )
        weights[phase] += weight
    return weights


def analyse_profiles(
    profiles: Iterable[tuple[str, records.Profile]],
    variants: Sequence[str],
    walls: dict[tuple[str, str], list[float]] | None = None,
    *,
    top_functions: int = TOP_FUNCTIONS,
    top_stacks: int = TOP_STACKS,
    phases: Sequence[PhaseRule] = (),
) -> ProfileAnalysis:
    """The report's profile figures from (variant, profile) pairs of profiled runs;
    ``walls`` maps (variant, purpose) to the wall times of its counted successful runs."""
    merged = merge_profiles(profiles)
    order = {name: index for index, name in enumerate(variants)}
    kinds = sorted({what for _, what in merged}, key=_kind_key)
    totals: list[ProfileTotal] = []
    functions: list[FunctionWeight] = []
    stacks: list[StackWeight] = []
    phase_table: list[PhaseWeight] = []
    for what in kinds:
        present = sorted((v for v, w in merged if w == what), key=lambda v: order.get(v, 0))
        weights = {}
        for variant in present:
            entry = merged[(variant, what)]
            assert entry.stacks is not None
            scale = _scale(entry.unit) / entry.runs
            total = sum(entry.stacks.values())
            purpose = "instructions" if what == records.INSTRUCTIONS else "profile"
            profiled = _median((walls or {}).get((variant, purpose), []))
            timed = _median((walls or {}).get((variant, TIMED), []))
            totals.append(
                ProfileTotal(
                    variant,
                    what,
                    report_unit(entry.unit),
                    entry.runs,
                    total * scale,
                    entry.events / entry.runs,
                    profiled,
                    timed,
                )
            )
            own_and_inclusive = function_weights(entry.stacks, off_cpu=what == records.OFF_CPU)
            weights[variant] = (own_and_inclusive, total, scale)
            if phases:
                unit = report_unit(entry.unit)
                for phase, weight in phase_weights(entry.stacks, phases).items():
                    share = weight / total if total else 0.0
                    phase_table.append(
                        PhaseWeight(variant, what, phase, unit, weight * scale, share)
                    )
            ranked = sorted(entry.stacks.items(), key=lambda item: (-item[1], item[0]))
            for stack, weight in ranked[:top_stacks]:
                share = weight / total if total else 0.0
                unit = report_unit(entry.unit)
                stacks.append(StackWeight(variant, what, stack, unit, weight * scale, share))
        # The union of each variant's top functions (by self, and by inclusive), each with
        # every variant's value: a function absent from one variant reads as zero there.
        chosen: dict[str, None] = {}
        for (own, inclusive), _, _ in weights.values():
            for table in (own, inclusive):
                ranked_names = sorted(table, key=lambda name: (-table[name], name))
                chosen.update(dict.fromkeys(ranked_names[:top_functions]))
        for function in chosen:
            for variant in present:
                (own, inclusive), total, scale = weights[variant]
                self_weight, inclusive_weight = own.get(function, 0), inclusive.get(function, 0)
                functions.append(
                    FunctionWeight(
                        variant,
                        what,
                        function,
                        report_unit(merged[(variant, what)].unit),
                        self_weight * scale,
                        inclusive_weight * scale,
                        self_weight / total if total else 0.0,
                        inclusive_weight / total if total else 0.0,
                    )
                )
    return ProfileAnalysis(tuple(totals), tuple(functions), tuple(stacks), tuple(phase_table))


def _kind_key(what: str) -> tuple[int, str]:
    return (KIND_ORDER.index(what) if what in KIND_ORDER else len(KIND_ORDER), what)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def load_round_profiles(store: Store, experiment_id: int) -> list[RoundProfile]:
    """Every stored profile of the experiment's counted, successful runs, with its variant and
    round: read and decoded once per analysis, then shared by the profile figures, the flame
    graphs and the attribution."""
    return [
        (item.variant, item.round_index, records.decode(item.data))
        for item in store.run_data(experiment_id, records.KIND)
    ]


def load_profiles(store: Store, experiment_id: int) -> list[tuple[str, records.Profile]]:
    """Every stored profile of the experiment's counted, successful runs, with its variant."""
    return [(variant, profile) for variant, _, profile in load_round_profiles(store, experiment_id)]


def profile_analysis(
    store: Store,
    experiment_id: int,
    variants: Sequence[str],
    stored: Sequence[RoundProfile],
    phases: Sequence[PhaseRule] = (),
) -> ProfileAnalysis | None:
    """The experiment's profile figures from its ``stored`` profiles (load_round_profiles);
    None when it stored none."""
    profiles = [(variant, profile) for variant, _, profile in stored]
    if not profiles:
        return None
    walls: dict[tuple[str, str], list[float]] = defaultdict(list)
    runs: list[Run] = store.runs(experiment_id, include_warmup=False, purpose=None)
    for run in runs:
        if run.ok and "wall" in run.metrics:
            walls[(run.variant, run.purpose)].append(run.metrics["wall"])
    return analyse_profiles(profiles, variants, walls, phases=phases)
