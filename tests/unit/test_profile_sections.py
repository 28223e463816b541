"""The profile probe's part of the default (compact) report: what the README says it holds,
the top functions by self and by inclusive time and each variant's top stacks."""

from __future__ import annotations

from analyses import generated_analysis, with_profile

import cutaway.report  # noqa: F401  (before a probe's sections: they import each other)
from cutaway.model import Analysis, FunctionWeight, ProfileTotal, StackWeight
from cutaway.probes.profile.sections import ProfileViews
from cutaway.report.sections import Table


def _analysis() -> Analysis:
    variants = ("few", "many")
    totals = tuple(
        ProfileTotal(v, "on-cpu", "seconds", 3, 0.01, 10.0, None, None) for v in variants
    )
    functions = tuple(
        FunctionWeight(v, "on-cpu", name, "seconds", own, inclusive, 0.1, 0.9)
        for v in variants
        for name, own, inclusive in (("main", 0.0, 0.009), ("parse", 0.008, 0.008))
    )
    stacks = tuple(
        StackWeight(v, "on-cpu", "prog;main;parse", "seconds", 0.008, 0.8) for v in variants
    )
    return with_profile(
        generated_analysis(variants, 3),
        profile_totals=totals,
        profile_functions=functions,
        profile_stacks=stacks,
    )


def _titles(blocks: list[tuple[object, ...]]) -> list[str]:
    return [
        "".join(map(str, item.title.detail))
        for block in blocks
        for item in block
        if isinstance(item, Table)
    ]


def test_the_default_report_has_inclusive_time_and_the_top_stacks() -> None:
    titles = _titles(ProfileViews().compact_blocks(_analysis()))
    assert any("self (the leaf)" in title for title in titles)
    assert any("inclusive (anywhere on the stack)" in title for title in titles)
    assert any("the top stacks of each variant" in title for title in titles)


def test_a_stack_too_long_for_the_terminal_stays_on_its_rows_line() -> None:
    # An off-CPU stack of eight kernel frames is wider than 80 columns: the table must not be
    # split into one of times without stacks and one of stacks.
    long_stack = "varnishd;" + ";".join(f"kernel_function_number_{i}_[k]" for i in range(10))
    analysis = with_profile(
        _analysis(),
        profile_stacks=tuple(
            StackWeight(v, "on-cpu", long_stack, "seconds", 1.143, 0.03) for v in ("few", "many")
        ),
    )
    from cutaway.report.terminal import render_terminal

    text = render_terminal(analysis, color=False, width=80)
    rows = [line for line in text.splitlines() if "kernel_function_number_9_[k]" in line]
    assert len(rows) == 2 and all(" 1.14 " in row for row in rows), text
