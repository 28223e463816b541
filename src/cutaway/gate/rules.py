"""What the gate fails on: a threshold per metric, from ``--fail-on METRIC=PCT`` or from the
experiment file's ``[check]`` table::

    [check]
    fail_on = { wall = "2%", instructions = "0.5%" }
    max_rounds = 200

Given on the command line, ``--fail-on`` replaces the file's ``fail_on`` as a whole (so a rule
can be dropped as well as changed). With neither, the gate is the first deterministic metric
the experiment measures at its equivalence margin (``instructions`` when the instructions probe
counts them: a count, which settles a 0.5 % threshold at the first look), else the primary
metric (``wall``) at the margin when one is given, else at ``DEFAULT_WALL_THRESHOLD``."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cutaway.model import DEFAULT_MARGIN, PRIMARY_METRIC, Spec
from cutaway.probes.core import plugins, spec_metrics
from cutaway.spec import SpecError, fields
from cutaway.spec.errors import describe
from cutaway.spec.locate import find_line

CHECK_TABLE = "check"
CHECK_KEYS = ("fail_on", "max_rounds")
FAIL_ON_OPTION = "--fail-on"
# Adaptive rounds are added until the verdict settles or this many counted rounds are done
# (or --max-time is spent): a gate must end within a CI job's time.
DEFAULT_MAX_ROUNDS = 200
# The default wall-time threshold. A 20 ms CPU-bound run on a shared 2-core VM varies by about
# 8 % from one round to the next (sd of the per-round log ratio, docs/performance.md); at that
# noise the gate's interval (99.2 %, six looks) is +/- 4.1 % after 28 rounds and +/- 2.9 % after
# 56, so an unchanged build clears +5 % within the 200-round budget (usually by the 56-round
# look, a few seconds), while the 0.5 % margin would need thousands of rounds and ends
# inconclusive. A 10 % regression still fails, at the same looks.
DEFAULT_WALL_THRESHOLD = 0.05


@dataclass(frozen=True)
class GateRule:
    """Fail when ``metric`` of a variant is worse than the baseline's by more than
    ``threshold`` (a fraction: 0.02 is 2 %), with confidence."""

    metric: str
    threshold: float


@dataclass(frozen=True)
class CheckSettings:
    rules: tuple[GateRule, ...]
    max_rounds: int


def parse_fail_on(text: str) -> GateRule:
    """``wall=2%`` -> GateRule("wall", 0.02); the metric is checked against the spec later."""
    metric, sign, threshold = text.partition("=")
    metric = metric.strip()
    if not sign or not metric or not threshold.strip():
        message = f"expected METRIC=PERCENT (such as wall=2%), found {describe(text)}"
        raise SpecError(message, key=FAIL_ON_OPTION)
    return GateRule(metric, fields.read_margin(threshold.strip(), (FAIL_ON_OPTION,)))


def check_settings(
    spec: Spec, flag_rules: Sequence[GateRule] = (), max_rounds: int | None = None
) -> CheckSettings:
    """The rules and the round budget of a check of ``spec``: the flags, else the file's
    ``[check]`` table, else the default. Every metric must be one the experiment measures.
    An error in the file names its line."""
    try:
        return _check_settings(spec, flag_rules, max_rounds)
    except SpecError as error:
        if error.key_path is None or spec.source_text is None:
            raise
        raise error.located(spec.source_path, find_line(spec.source_text, error.key_path)) from None


def _check_settings(
    spec: Spec, flag_rules: Sequence[GateRule], max_rounds: int | None
) -> CheckSettings:
    table = _check_table(spec)
    rules = tuple(flag_rules) or _file_rules(table) or (_default_rule(spec),)
    known = [metric.name for metric in spec_metrics(spec)]
    for rule in rules:
        if rule.metric not in known:
            hint = _counting_hint(rule.metric)
            message = (
                f"the experiment does not measure {describe(rule.metric)}{hint}; "
                f"its metrics: {', '.join(known)}"
            )
            if flag_rules:
                raise SpecError(message, key=FAIL_ON_OPTION)
            raise SpecError(message, key_path=(CHECK_TABLE, "fail_on", rule.metric))
    if len({rule.metric for rule in rules}) < len(rules):
        raise SpecError("a metric is given twice", key=FAIL_ON_OPTION)
    if max_rounds is None:
        max_rounds = _file_max_rounds(table)
    else:
        max_rounds = fields.read_rounds(max_rounds, ("--max-rounds",))
    if max_rounds < spec.rounds:
        message = f"the budget of {max_rounds} rounds is below the {spec.rounds} rounds planned"
        raise SpecError(message, key="--max-rounds")
    return CheckSettings(rules, max_rounds)


def default_metric(spec: Spec) -> str:
    """The metric the gate judges when no rule is given (and ``cutaway bisect`` judges the
    same): the first deterministic metric the experiment measures, a count that settles at the
    first look (the instructions probe's), else the primary metric (wall time)."""
    counted = (metric.name for metric in spec_metrics(spec) if metric.deterministic)
    return next(counted, PRIMARY_METRIC)


def _default_rule(spec: Spec) -> GateRule:
    metric = default_metric(spec)
    if metric != PRIMARY_METRIC:  # counted, so the gate's natural metric
        return GateRule(metric, spec.margin)
    given = spec.margin != DEFAULT_MARGIN  # --margin or the file's margin: the user's choice
    return GateRule(PRIMARY_METRIC, spec.margin if given else DEFAULT_WALL_THRESHOLD)


def _counting_hint(metric: str) -> str:
    """How to count ``metric`` when a probe counts it (a deterministic metric of a plugin with
    a ``cutaway run`` flag: the instructions probe's ``--instructions``), else nothing."""
    for plugin in plugins():
        counts = any(m.name == metric and m.deterministic for m in plugin.known_metrics)
        if counts and plugin.options:
            return f" (add {plugin.options[0]} to count them)"
    return ""


def _check_table(spec: Spec) -> Mapping[str, object]:
    """The file's ``[check]`` table ({} in quick mode or without one), its keys checked."""
    if spec.source_text is None:
        return {}
    table = tomllib.loads(spec.source_text.removeprefix("\ufeff")).get(CHECK_TABLE, {})
    if not isinstance(table, Mapping):
        raise SpecError(f"expected a table, found {describe(table)}", key_path=(CHECK_TABLE,))
    for key in table:
        if key not in CHECK_KEYS:
            message = f"unknown key (known keys: {', '.join(CHECK_KEYS)})"
            raise SpecError(message, key_path=(CHECK_TABLE, key))
    return table


def _file_rules(table: Mapping[str, object]) -> tuple[GateRule, ...]:
    fail_on = table.get("fail_on", {})
    key_path = (CHECK_TABLE, "fail_on")
    if not isinstance(fail_on, Mapping):
        message = 'expected a table of METRIC = "PERCENT", such as { wall = "2%" }'
        raise SpecError(f"{message}, found {describe(fail_on)}", key_path=key_path)
    return tuple(
        GateRule(str(metric), fields.read_margin(value, (*key_path, str(metric))))
        for metric, value in fail_on.items()
    )


def _file_max_rounds(table: Mapping[str, object]) -> int:
    return fields.read_rounds(
        table.get("max_rounds", DEFAULT_MAX_ROUNDS), (CHECK_TABLE, "max_rounds")
    )
