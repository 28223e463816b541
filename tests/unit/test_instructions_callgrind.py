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


def test_an_unnamed_function_is_named_by_its_object_not_its_address() -> None:
    # A stripped program: callgrind names its functions by address, which moves with every
    # build. Named by the object it is in (compressed names, given by ob= or cob=), as perf's
    # folding names such a frame; an address found in two objects keeps its address.
    text = (
        "# callgrind format\nversion: 1\ncmd: ./prog\nevents: Ir\n"
        "ob=(1) /usr/lib/libc.so.6\nfn=(1) main'(below main)\n"
        "cob=(2) /opt/prog\ncfn=(2) 0x0000000000001130'main'(below main)\ncalls=1 0\n0 70\n0 5\n"
        "ob=(2)\nfn=(2)\n0 70\n"
        "ob=(1)\nfn=(3) 0x0000000000001050'(below main)\n0 10\n"
        "ob=(2)\nfn=(4) 0x0000000000001050'main'(below main)\n0 15\n"
        "summary: 100\n"
    )
    profile = parse_callgrind(text, max_callers=8)
    assert profile.stacks == {
        "(below main);main": 5,
        "(below main);main;[prog]": 70,
        "(below main);0x0000000000001050": 10,
        "(below main);main;0x0000000000001050": 15,
    }
