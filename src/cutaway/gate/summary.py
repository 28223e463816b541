"""The gate's verdict as text: a Markdown summary fit for a pull-request comment (and for
$GITHUB_STEP_SUMMARY), and the lines the terminal shows. Every name and command is the
user's text: escaped or put in code spans that nothing inside can break."""

from __future__ import annotations

from collections.abc import Sequence

from cutaway.gate.decision import GateResult, GateVerdict, overall, rounds_to_decide
from cutaway.model import Spec
from cutaway.report.markdown_text import code, escape, table
from cutaway.report.units import (
    format_change,
    format_change_interval,
    format_quantity,
)
from cutaway.visible import visible

HEADLINES = {
    GateVerdict.PASS: "✅ no regression",
    GateVerdict.FAIL: "❌ regression",
    GateVerdict.INCONCLUSIVE: "⚠️ inconclusive",
}
VERDICT_CELLS = {
    GateVerdict.PASS: "✅ pass",
    GateVerdict.FAIL: "❌ fail",
    GateVerdict.INCONCLUSIVE: "⚠️ inconclusive",
}
MEANINGS = {
    GateVerdict.PASS: "no variant is worse than the baseline beyond its threshold, with confidence",
    GateVerdict.FAIL: "a variant is worse than the baseline beyond the threshold, with confidence",
    GateVerdict.INCONCLUSIVE: (
        "the budget was spent before the interval left the threshold: more rounds, a quieter "
        "machine or a deterministic metric (--instructions) would settle it"
    ),
}


# Metrics read from the clock, which a busy or shared machine makes noisy.
TIME_METRICS = ("wall", "user", "sys", "cpu")
# What to gate on instead, by metric: steadier metrics the experiment can measure.
STEADIER = {
    "wall": "counted instructions (--instructions --fail-on instructions=0.5%: deterministic, "
    "not time) or CPU time (--fail-on cpu=5%: user + sys, without the time spent waiting)",
}
STEADIEST = "counted instructions (--instructions --fail-on instructions=0.5%: deterministic)"


def advice(results: Sequence[GateResult]) -> list[str]:
    """For each time metric that did not settle: its per-round noise, about how many rounds
    the interval would need at that noise, and what to gate on instead. A pull request that
    changed nothing must not be left with a bare "inconclusive" on a noisy runner."""
    lines = []
    for result in results:
        if result.verdict is not GateVerdict.INCONCLUSIVE or result.metric not in TIME_METRICS:
            continue
        needed = rounds_to_decide(result)
        noise = (
            f"its per-round noise was {result.log_sd * 100:.1f} % (sd of a round's log ratio)"
            if needed is not None
            else "its noise is not known yet"
        )
        rounds = (
            f", at which the interval would leave {format_change(result.limit)} after about "
            f"{format_quantity(needed, 'round')}"
            if needed is not None
            else ""
        )
        lines.append(
            f"{result.metric} of {result.variant} did not settle: {noise}{rounds}. Gate on "
            f"{STEADIER.get(result.metric, STEADIEST)}, or give {result.metric} a threshold "
            f"that noise can settle (--fail-on {result.metric}=PCT)."
        )
    return lines


def _confidence(confidence: float) -> str:
    """A per-look confidence (0.991666...) as "99.2 %": three digits say enough."""
    return f"{confidence * 100:.3g} %"


def _command_text(spec: Spec, name: str) -> str:
    return spec.variant(name).command_text


def render_markdown(
    results: Sequence[GateResult],
    spec: Spec,
    *,
    experiment_id: int,
    rounds: int,
    stopped: str,
    report_hint: str,
) -> str:
    verdict = overall(results)
    meaning = MEANINGS[verdict]
    lines = [
        f"### cutaway check: {HEADLINES[verdict]}",
        "",
        escape(meaning[0].upper() + meaning[1:]) + ".",
        "",
    ]
    rows = [
        [
            code(result.metric),
            code(result.variant),
            format_change(result.ratio),
            format_change_interval(result.ci_low, result.ci_high),
            format_change(result.limit),
            str(result.n_pairs),
            VERDICT_CELLS[result.verdict],
        ]
        for result in results
    ]
    confidence = _confidence(results[0].confidence) if results else "95 %"
    header = ["Metric", "Variant", "Change", f"{confidence} interval", "Fails beyond"]
    lines += table([*header, "Rounds", "Verdict"], "llrrrrl", rows)
    lines += ["", f"Each variant against the baseline {code(spec.baseline)}:"]
    lines += [f"- {code(v.name)}: {code(_command_text(spec, v.name))}" for v in spec.variants]
    hints = advice(results)
    if hints:
        lines += [""] + [f"- {escape(hint)}" for hint in hints]
    lines += [
        "",
        f"{format_quantity(rounds, 'round')} of paired, interleaved runs; "
        f"{escape(stopped)}. Stored as experiment #{experiment_id}: {code(report_hint)}.",
        "",
    ]
    return "\n".join(lines)


def render_lines(results: Sequence[GateResult], stopped: str) -> list[str]:
    """The terminal's lines: one per rule and variant, then the verdict."""
    lines = []
    for result in results:
        lines.append(
            visible(
                f"check {result.metric} of {result.variant}: "
                f"{format_change(result.ratio)} "
                f"{format_change_interval(result.ci_low, result.ci_high)} "
                f"({_confidence(result.confidence)}), fails beyond "
                f"{format_change(result.limit)}: {result.verdict.value} "
                f"({format_quantity(result.n_pairs, 'round')})"
            )
        )
    verdict = overall(results)
    lines.append(f"check: {verdict.value}: {MEANINGS[verdict]} ({visible(stopped)})")
    lines += [visible(f"check: {hint}") for hint in advice(results)]
    return lines
