"""Every field of a Spec comes back from the store as it went in: the checked reader of
stored specs (store/stored_spec.py) must know each field the model has, or an experiment
resumed or reported later silently loses a setting (keep_leftovers, a probe)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cutaway.model import LoadSpec, ProbeSpec, Spec, Variant
from cutaway.probes.calls.settings import with_calls
from cutaway.probes.instructions.settings import with_instructions
from cutaway.probes.profile.settings import PhaseRule, ProfileSpec, with_profile
from cutaway.probes.spans.settings import SpansSpec, with_spans
from cutaway.probes.syscalls.settings import with_syscalls
from cutaway.store import Store


def test_a_spec_with_every_setting_comes_back_whole(tmp_path: Path) -> None:
    spec = Spec(
        name="all",
        variants=(Variant("a", ("true",)), Variant("b", ("true",))),
        baseline="a",
        probes=with_spans(
            with_profile(
                with_syscalls(
                    with_calls(
                        with_instructions(ProbeSpec(), True), ("getpwnam",), thread_cpu=True
                    ),
                    ("openat",),
                ),
                ProfileSpec(
                    frequency_hz=99,
                    system_wide=True,
                    call_graph="dwarf",
                    phases=(PhaseRule("parse", "^parse"), PhaseRule("regex", "re_search|regexec")),
                ),
            ),
            SpansSpec(otlp_file="/var/log/otel/traces.jsonl"),
        ),
        ignore_failure=True,
        keep_leftovers=True,
        load=LoadSpec(
            targets={"a": "http://127.0.0.1:8080/x", "b": "127.0.0.1:8081"},
            protocol="memcached",
            connections=7,
            rate=1500.0,
            duration_seconds=None,
            requests=1000,
            warmup_seconds=0.5,
            request_timeout_seconds=1.5,
            new_connection=True,
            threads=2,
            ready_timeout_seconds=3.0,
            pid_files={"a": "a.pid"},
            server_metrics=False,
        ),
    )
    with Store(tmp_path / "s.db") as store:
        experiment_id = store.create_experiment(spec, {}, None, "t")
        stored = store.experiment(experiment_id).spec
    for field in dataclasses.fields(Spec):
        if field.name != "source_text":
            assert getattr(stored, field.name) == getattr(spec, field.name), field.name
