"""The spans probe's setting: ``[probes] spans`` in the experiment file (true, false or a table
with ``otlp_file``), quick mode's ``--spans``, and the probe chosen from it."""

from __future__ import annotations

import pytest

from cutaway.model import ProbeSpec, Spec, Variant
from cutaway.probes.core import build_probes
from cutaway.probes.spans.settings import SpansSpec, spans_settings, with_spans
from cutaway.spec import SpecError, parse_spec
from cutaway.spec.overrides import apply_overrides

HEAD = 'name = "p"\ncommand = "true"\n[probes]\n'


def test_spans_true_false_or_a_table() -> None:
    assert spans_settings(parse_spec(HEAD + "spans = true\n").probes) == SpansSpec()
    assert spans_settings(parse_spec(HEAD + "spans = false\n").probes) is None
    spec = parse_spec(HEAD + 'spans = { otlp_file = "/tmp/traces.jsonl" }\n')
    assert spans_settings(spec.probes) == SpansSpec(otlp_file="/tmp/traces.jsonl")
    assert ProbeSpec.from_dict(spec.probes.to_dict()) == spec.probes  # stored and read back


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('spans = "yes"\n', r"probes\.spans.*true, false or a table"),
        ("spans = { file = 1 }\n", r"probes\.spans\.file.*unknown spans setting"),
        ("spans = { otlp_file = 3 }\n", r"probes\.spans\.otlp_file.*a file path"),
    ],
)
def test_a_bad_setting_names_the_key_and_line(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as caught:
        parse_spec(HEAD + text)
    assert "line 4" in str(caught.value)


def test_quick_mode_turns_spans_on_and_keeps_the_file_settings() -> None:
    off = parse_spec(HEAD + "instructions = false\n")
    assert spans_settings(apply_overrides(off, {"--spans": True}).probes) == SpansSpec()
    on = parse_spec(HEAD + 'spans = { otlp_file = "x.jsonl" }\n')
    assert spans_settings(apply_overrides(on, {"--spans": True}).probes) == SpansSpec("x.jsonl")


def test_the_registry_builds_the_spans_probe() -> None:
    spec = Spec(
        name="p",
        variants=(Variant("v", ("true",)),),
        baseline="v",
        probes=with_spans(ProbeSpec(), SpansSpec()),
    )
    (probe,) = build_probes(spec)
    try:
        assert probe.name == "spans" and not probe.own_runs
        assert "span SDK records" in probe.check()
    finally:
        probe.close()
