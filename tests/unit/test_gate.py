"""The gate's pure parts: the verdict on an interval against a threshold, the overall verdict,
the rules from flags and from an experiment file's [check] table (bad input named by file,
line and key), the Markdown summary with hostile names, and the bisection's search."""

from __future__ import annotations

import math
import re

import pytest
from hostile import HOSTILE
from markdown_it import MarkdownIt

from cutaway.bisect.search import Search
from cutaway.bisect.session import worse_judge
from cutaway.gate.decision import GateResult, GateVerdict, decide, overall, plan, rounds_to_decide
from cutaway.gate.rules import (
    DEFAULT_MAX_ROUNDS,
    DEFAULT_WALL_THRESHOLD,
    GateRule,
    check_settings,
    parse_fail_on,
)
from cutaway.gate.summary import advice, render_lines, render_markdown
from cutaway.model import HIGHER_IS_BETTER, LOWER_IS_BETTER, ProbeSpec, Spec, Variant
from cutaway.probes.instructions.settings import with_instructions
from cutaway.spec import SpecError, parse_spec, quick_spec

FAIL, PASS, UNSURE = GateVerdict.FAIL, GateVerdict.PASS, GateVerdict.INCONCLUSIVE


@pytest.mark.parametrize(
    ("low", "high", "threshold", "verdict"),
    [
        (1.021, 1.05, 0.02, FAIL),  # wholly beyond +2 %
        (0.97, 1.019, 0.02, PASS),  # wholly short of it
        (0.80, 0.90, 0.02, PASS),  # an improvement passes
        (1.01, 1.03, 0.02, UNSURE),  # straddles the threshold
        (1.0, 1.0, 0.0, PASS),  # identical counts, no tolerance
        (1.001, 1.001, 0.0, FAIL),
        (math.nan, math.nan, 0.02, UNSURE),  # too few rounds for an interval
        (0.0, math.inf, 0.02, UNSURE),
    ],
)
def test_a_cost_fails_only_when_the_whole_interval_is_beyond_the_threshold(
    low: float, high: float, threshold: float, verdict: GateVerdict
) -> None:
    assert decide(low, high, threshold, LOWER_IS_BETTER) is verdict


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (0.90, 0.97, FAIL),  # fewer requests per second, beyond 2 %
        (0.985, 1.10, PASS),
        (0.97, 0.99, UNSURE),
        (0.0, 0.5, FAIL),
    ],
)
def test_a_throughput_is_read_the_other_way(low: float, high: float, verdict: GateVerdict) -> None:
    assert decide(low, high, 0.02, HIGHER_IS_BETTER) is verdict


def result(verdict: GateVerdict, variant: str = "candidate", metric: str = "wall") -> GateResult:
    return GateResult(
        metric, "seconds", LOWER_IS_BETTER, "baseline", variant, 0.02, 12, 1.0, 0.99, 1.01, 0.95,
        verdict,
    )  # fmt: skip


def test_one_failing_rule_fails_the_check_and_every_rule_must_pass() -> None:
    assert overall([result(PASS), result(FAIL)]) is FAIL
    assert overall([result(PASS), result(UNSURE)]) is UNSURE
    assert overall([result(PASS), result(PASS)]) is PASS
    assert overall([result(UNSURE), result(FAIL)]) is FAIL
    assert overall([]) is UNSURE


def test_fail_on_reads_a_metric_and_a_percentage() -> None:
    assert parse_fail_on("wall=2%") == GateRule("wall", 0.02)
    assert parse_fail_on(" instructions = 0.5% ") == GateRule("instructions", 0.005)


@pytest.mark.parametrize("text", ["wall", "wall=", "=2%", "wall=fast", "wall=150%", "wall=-1%"])
def test_a_bad_fail_on_names_the_option(text: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_fail_on(text)
    assert "--fail-on" in str(caught.value)


def two_commands(**options: object) -> Spec:
    return quick_spec(["true", "true"], ["base", "new"], **options)  # type: ignore[arg-type]


def test_the_default_gate_is_wall_at_five_percent_or_counted_instructions_at_the_margin() -> None:
    # The 0.5 % margin on wall time left an unchanged build inconclusive on a noisy runner.
    assert check_settings(two_commands()).rules == (GateRule("wall", DEFAULT_WALL_THRESHOLD),)
    assert DEFAULT_WALL_THRESHOLD == 0.05
    spec = two_commands(margin=0.01)  # a margin of the user's own is the wall threshold
    assert check_settings(spec).rules == (GateRule("wall", 0.01),)
    assert check_settings(spec).max_rounds == DEFAULT_MAX_ROUNDS
    counted = Spec(
        name="x",
        variants=(Variant("a", ("true",)), Variant("b", ("true",))),
        baseline="a",
        probes=with_instructions(ProbeSpec(), True),
    )
    assert check_settings(counted).rules == (GateRule("instructions", counted.margin),)


def test_a_rule_for_a_metric_not_measured_is_bad_input() -> None:
    with pytest.raises(SpecError, match=r"does not measure .instructions. .add --instructions"):
        check_settings(two_commands(), [GateRule("instructions", 0.01)])
    with pytest.raises(SpecError, match="--max-rounds"):
        check_settings(two_commands(rounds=10), max_rounds=5)


FILE = """\
name = "gate"
command = "true"

[[variants]]
name = "base"

[[variants]]
name = "new"

[check]
fail_on = { wall = "2%", max_rss = "10%" }
max_rounds = 40
"""


def test_the_check_table_sets_rules_and_budget_and_flags_replace_its_rules() -> None:
    spec = parse_spec(FILE, "gate.toml")
    settings = check_settings(spec)
    assert settings.rules == (GateRule("wall", 0.02), GateRule("max_rss", 0.10))
    assert settings.max_rounds == 40
    flagged = check_settings(spec, [GateRule("cpu", 0.05)], max_rounds=60)
    assert flagged.rules == (GateRule("cpu", 0.05),)
    assert flagged.max_rounds == 60


@pytest.mark.parametrize(
    ("table", "line", "key"),
    [
        ('fail_on = { wall = "2%", rps = "1%" }', 11, "check.fail_on.rps"),
        ('fail_on = { wall = "lots" }', 11, "check.fail_on.wall"),
        ('fail_on = "2%"', 11, "check.fail_on"),
        ('fail_on = { wall = "2%" }\nmax_round = 3', 12, "check.max_round"),
        ("max_rounds = 0", 11, "check.max_rounds"),
    ],
)
def test_a_bad_check_table_names_file_line_and_key(table: str, line: int, key: str) -> None:
    text = FILE[: FILE.index("[check]")] + "[check]\n" + table + "\n"
    spec = parse_spec(text, "gate.toml")
    with pytest.raises(SpecError) as caught:
        check_settings(spec)
    assert str(caught.value).startswith(f"gate.toml:{line}: {key}: ")


def test_the_summary_shows_hostile_names_as_text() -> None:
    for name in HOSTILE:
        spec = quick_spec(["true", "true"], ["base", name[:100] or "x"], shell=False)
        markdown = render_markdown(
            [result(FAIL, variant=spec.variants[1].name)],
            spec,
            experiment_id=3,
            rounds=12,
            stopped="stopped when the verdict was settled",
            report_hint="cutaway report 3",
        )
        assert "❌ regression" in markdown
        html = MarkdownIt("commonmark").enable("table").render(markdown)
        assert not re.search(r"<(script|img|style|a |em>)", html, re.IGNORECASE)
        assert "\x1b" not in markdown and "\r" not in markdown
        assert html.count("<tr>") == 2  # the header and one row: no name breaks the table


def test_the_search_tests_the_middle_and_narrows_to_the_first_bad_commit() -> None:
    search = Search(9)  # 0 good, 8 bad
    assert search.steps_left() == 3
    assert search.next() == 4
    search.mark_good(4)
    assert search.next() == 6
    search.mark_bad(6)
    assert search.next() == 5
    search.mark_good(5)
    assert search.next() is None
    assert search.candidates() == [6]


def test_a_skipped_commit_is_stepped_around_and_can_leave_candidates() -> None:
    search = Search(5)  # 0 good, 4 bad
    assert search.next() == 2
    search.skip(2)
    assert search.next() == 1  # the nearer of 1 and 3, the lower
    search.mark_good(1)
    assert search.next() == 3
    search.mark_bad(3)
    assert search.next() is None
    assert search.candidates() == [2, 3]  # 2 could not be built: it may be the first bad one
    with pytest.raises(ValueError):
        search.mark_bad(0)


def test_the_gate_looks_when_rounds_double_and_spends_alpha_across_looks() -> None:
    spec = two_commands(rounds=5)
    gate_plan = plan(spec, [GateRule("wall", 0.01)], 200)
    # The first look needs a bounded interval at the per-look confidence (7 pairs at 99 %+).
    assert gate_plan.looks == (7, 14, 28, 56, 112, 200)
    assert gate_plan.confidence == pytest.approx(1 - 0.05 / 6)
    two_rules = plan(spec, [GateRule("wall", 0.01), GateRule("cpu", 0.01)], 200)
    assert two_rules.confidence == pytest.approx(1 - 0.05 / (2 * len(two_rules.looks)))
    assert plan(spec, [GateRule("wall", 0.01)], 5).looks == (5,)


def noisy(metric: str, ratio: float, low: float, high: float, log_sd: float) -> GateResult:
    return GateResult(
        metric, "seconds", LOWER_IS_BETTER, "main", "pull request", 0.05, 200, ratio, low, high,
        0.992, decide(low, high, 0.05, LOWER_IS_BETTER), log_sd,
    )  # fmt: skip


def test_wall_time_that_does_not_settle_names_its_noise_and_what_to_gate_on() -> None:
    unsettled = noisy("wall", 1.02, 0.983, 1.058, 0.20)  # 200 rounds at 20 % noise
    assert unsettled.verdict is UNSURE
    # (z 2.65 * 0.20 / ln(1.05 / 1.02))^2: about 330 rounds at this noise.
    assert 300 < (rounds_to_decide(unsettled) or 0) < 370
    [hint] = advice([unsettled])
    assert "per-round noise was 20.0 %" in hint and "+5.00 %" in hint and "rounds" in hint
    assert "--instructions" in hint and "--fail-on cpu=" in hint
    lines = render_lines([unsettled], "stopped when the budget of 200 rounds was spent")
    assert lines[-1] == f"check: {hint}"
    assert advice([noisy("wall", 1.0, 0.98, 1.02, 0.08)]) == []  # settled: nothing to advise
    [cpu_hint] = advice([noisy("cpu", 1.02, 0.983, 1.058, 0.20)])
    assert "--instructions" in cpu_hint and "CPU time" not in cpu_hint  # it is CPU time


def test_bisect_asks_whether_bad_is_worse_first_and_then_whether_it_is_within_the_threshold() -> (
    None
):
    def judged(low: float, high: float, threshold: float | None) -> GateVerdict:
        return worse_judge(threshold)([noisy("wall", (low + high) / 2, low, high, 0.1)])

    assert judged(1.01, 1.03, None) is FAIL  # worse, with confidence
    assert judged(1.01, 1.03, 0.05) is FAIL  # a certain step below the threshold is a step
    assert judged(0.98, 1.03, None) is UNSURE  # reaches 1: more rounds, or not worse at the end
    assert judged(0.98, 1.03, 0.05) is PASS  # not worse by more than 5 %, with confidence
    assert judged(0.90, 0.99, None) is PASS  # better
