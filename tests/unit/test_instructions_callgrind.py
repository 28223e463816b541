"""callgrind's output format read into folded stacks: compressed names, relative positions,
calls' inclusive costs kept out of the caller's own, truncated contexts rooted apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from cutaway.probes.instructions.callgrind import (
    TRUNCATED,
    CallgrindFormatError,
    context_stack,
    parse_callgrind,
)

FIXTURE = Path(__file__).parent.parent / "fixtures" / "callgrind" / "small.out"


def test_self_costs_become_folded_stacks_that_add_up_to_the_summary() -> None:
    profile = parse_callgrind(FIXTURE.read_text(), max_callers=3)
    assert profile.command == "./two 100000"
    assert profile.total == 1000
    assert profile.stacks == {
        "(below main);main": 15,  # 10 + 5: the calls' 600 and 300 are the callees' own
        "(below main);main;heavy_work": 600,
        "(below main);main;light_work": 300,
        f"{TRUNCATED};c;b;a;deep": 85,  # three callers: the limit, outer frames may be lost
    }
    assert sum(profile.stacks.values()) == profile.total


def test_a_context_shorter_than_the_limit_is_whole() -> None:
    assert context_stack("leaf'caller", 64) == "caller;leaf"
    assert context_stack("leaf'b'a", 2) == f"{TRUNCATED};a;b;leaf"


def test_other_text_is_refused() -> None:
    with pytest.raises(CallgrindFormatError):
        parse_callgrind("perf script output\n", 64)
