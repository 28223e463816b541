"""The highest rate a server sustains with a latency percentile under a target (``p99 <= 10
ms``), searched over rates with the generator in open loop.

The design: a closed-loop phase first measures what the server answers at most with the given
connections (no open-loop rate above it can be kept); then bisection over open-loop rates
between 0 and that ceiling. A rate *passes* when, over ``repeats`` load phases at it, the
corrected percentile of every request together (their HDR histograms merged) is at most the
target, no request failed and the generator kept up; otherwise it *fails*. The search stops
when the bracket [highest passing rate, lowest failing rate above it] is narrower than
``precision`` of its top, or after ``max_steps`` rates. The answer is that bracket: the
highest rate that passed (the figure reported) and the lowest that failed (its interval's top).
It is a bracket from measurements, not a confidence interval: a noisy machine widens it
through inconsistent passes, and each step is kept so that the reader sees them.

A phase in which the generator itself was saturated (CPU-bound: a thread with no idle time
left) says nothing about the server: such a rate
counts as failed (the search goes lower), and when the lowest failing rate is one of them the
answer is marked ``generator_limited``: the server's own limit may be higher."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cutaway.probes.load.generator import LoadResult
from cutaway.probes.load.hdr import Histogram
from cutaway.probes.load.settings import LatencyTarget as LatencyTarget

NS = 1e-9


@dataclass(frozen=True)
class Step:
    """One rate tried: asked for, answered (throughput), the percentile measured, the failed
    requests, and whether it passed."""

    rate: float
    throughput: float
    latency: float  # seconds, the target's percentile over the step's phases
    errors: int
    generator_saturated: bool
    passed: bool


@dataclass(frozen=True)
class MaxRate:
    """The answer: ``rate`` (the highest passing rate; 0 when none passed) with its bracket
    [``rate``, ``failed_above``] (None when no rate failed up to the ceiling)."""

    target: LatencyTarget
    ceiling: float  # closed-loop throughput
    rate: float
    failed_above: float | None
    steps: tuple[Step, ...]
    generator_limited: bool


Measure = Callable[[float | None], LoadResult]  # a load phase at a rate (None: closed loop)


def search_max_rate(
    measure: Measure,
    target: LatencyTarget,
    *,
    repeats: int = 2,
    precision: float = 0.05,
    max_steps: int = 10,
) -> MaxRate:
    """Bisection of open-loop rates (see the module's docstring). ``measure`` runs one load
    phase at a rate and returns its result."""
    ceiling = measure(None).throughput
    low, high = 0.0, ceiling
    failed_above: float | None = None
    limited = False  # the lowest failing rate failed because the generator could not keep up
    steps: list[Step] = []
    rate = ceiling / 2
    while len(steps) < max_steps and ceiling > 0:
        step = _step(measure, rate, target, repeats)
        steps.append(step)
        if step.passed:
            low = rate
        else:
            high = failed_above = rate
            limited = step.generator_saturated
        if failed_above is None and low >= ceiling * 0.95:
            break  # passes near the ceiling: the answer is at the ceiling
        if (high - low) <= precision * high:
            break
        rate = (low + high) / 2
    return MaxRate(target, ceiling, low, failed_above, tuple(steps), limited)


def _step(measure: Measure, rate: float, target: LatencyTarget, repeats: int) -> Step:
    results = [measure(rate) for _ in range(repeats)]
    merged = Histogram.merged(r.latency.corrected.total for r in results)
    latency = merged.percentile(target.percentile) * NS if merged.count else float("inf")
    errors = sum(r.errors.total for r in results)
    saturated = any(r.generator.saturated for r in results)
    throughput = sum(r.requests for r in results) / max(sum(r.duration for r in results), 1e-9)
    passed = latency <= target.seconds and errors == 0 and not saturated
    return Step(rate, throughput, latency, errors, saturated, passed)


def describe(name: str, answer: MaxRate) -> Sequence[str]:
    """The answer in lines of text, with every step."""
    if answer.generator_limited and answer.rate == 0:
        head = (
            f"{name}: no answer: the load generator was CPU-bound at every rate tried (down "
            f"to {answer.failed_above:,.0f} requests/s): is the machine busy?"
        )
    elif answer.generator_limited:
        head = (
            f"{name}: at least {answer.rate:,.0f} requests/s under {answer.target}: the load "
            f"generator was CPU-bound at {answer.failed_above:,.0f} requests/s, so the "
            "server's own limit is not known (a lower bound)"
        )
    elif answer.rate == 0:
        head = f"{name}: no rate tried kept {answer.target} (ceiling {answer.ceiling:,.0f}/s)"
    else:
        top = (
            f"{answer.failed_above:,.0f}"
            if answer.failed_above is not None
            else f"not reached up to {answer.ceiling:,.0f}, the closed-loop ceiling"
        )
        head = (
            f"{name}: max rate under {answer.target}: {answer.rate:,.0f} requests/s "
            f"[{answer.rate:,.0f}, {top}]"
        )
    lines = [head]
    for step in answer.steps:
        verdict = "pass" if step.passed else "fail"
        lines.append(
            f"  {step.rate:>12,.0f}/s asked  {step.throughput:>12,.0f}/s answered  "
            f"p{answer.target.percentile:g} {step.latency * 1e3:>9.3f} ms  "
            f"errors {step.errors:>6}  {verdict}"
            + ("  (generator CPU-bound)" if step.generator_saturated else "")
        )
    return lines
