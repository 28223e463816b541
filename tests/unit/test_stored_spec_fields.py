"""Every field of a Spec comes back from the store as it went in: the checked reader of
stored specs (store/stored_spec.py) must know each field the model has, or an experiment
resumed or reported later silently loses a setting (keep_leftovers, a probe)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from cutaway.model import ProbeSpec, Spec, Variant
from cutaway.probes.calls.settings import with_calls
from cutaway.probes.instructions.settings import with_instructions
from cutaway.probes.load.settings import LoadSpec, load_settings, with_load
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
    )
    spec = with_load(
        spec,
        LoadSpec(
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
    assert load_settings(stored) == load_settings(spec)


# A load experiment's spec_json exactly as cutaway wrote it before [load] was the load
# plugin's table (Spec.to_dict with its ``load`` field), and a plain experiment's, whose
# ``load`` was null.
STORED_LOAD = (
    '{"name": "servers", "variants": [{"name": "old", "command": ["cw_load", "--target", '
    '"127.0.0.1:8080", "--protocol", "http", "--path", "/", "--connections", "4", "--rate", '
    '"2000", "--duration", "5", "--warmup", "1", "--timeout", "2"], "shell": false, "env": {}, '
    '"cwd": null, "hooks": {"setup": "nginx -c old.conf", "prepare": null, "conclude": null, '
    '"cleanup": null}, "params": {}, "stdin": null, "stdout": "null"}, {"name": "new", '
    '"command": ["cw_load", "--target", "127.0.0.1:8081", "--protocol", "http", "--path", "/x", '
    '"--connections", "4", "--rate", "2000", "--duration", "5", "--warmup", "1", "--timeout", '
    '"2"], "shell": false, "env": {}, "cwd": null, "hooks": {"setup": null, "prepare": null, '
    '"conclude": null, "cleanup": null}, "params": {}, "stdin": null, "stdout": "null"}], '
    '"baseline": "old", "rounds": 10, "warmup_rounds": 1, "timeout_seconds": null, "margin": '
    '0.005, "confidence": 0.95, "until_width": null, "max_time_seconds": null, "seed": 7, '
    '"probes": {}, "metrics": [], "ignore_failure": false, "hook_timeout_seconds": 600.0, '
    '"keep_leftovers": false, "load": {"targets": {"old": "127.0.0.1:8080", "new": '
    '"http://127.0.0.1:8081/x"}, "protocol": "http", "connections": 4, "rate": 2000.0, '
    '"duration_seconds": 5.0, "requests": null, "warmup_seconds": 1.0, '
    '"request_timeout_seconds": 2.0, "new_connection": true, "threads": null, '
    '"ready_timeout_seconds": 10.0, "pid_files": {"old": "old.pid"}, "server_metrics": false}, '
    '"source_path": "servers.toml"}'
)


def _stored_as(tmp_path: Path, spec_json: str) -> Spec:
    """The spec of an experiment whose spec_json is ``spec_json``, as the store reads it."""
    path = tmp_path / "s.db"
    names = tuple(variant["name"] for variant in json.loads(spec_json)["variants"])
    with Store(path) as store:
        plain = Spec(name="x", variants=tuple(Variant(n, ("true",)) for n in names), baseline="a")
        store.create_experiment(dataclasses.replace(plain, baseline=names[0]), {}, None, "t")
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE experiments SET spec_json = ?", (spec_json,))
    with Store(path, create=False) as store:
        return store.experiment(1).spec


def test_a_load_experiment_stored_before_the_load_plugin_owned_its_table_reads_back(
    tmp_path: Path,
) -> None:
    from cutaway.probes.core import check_stored_settings, primary_metric, spec_metrics

    spec = _stored_as(tmp_path, STORED_LOAD)
    assert load_settings(spec) == LoadSpec(
        targets={"old": "127.0.0.1:8080", "new": "http://127.0.0.1:8081/x"},
        connections=4,
        rate=2000.0,
        new_connection=True,
        pid_files={"old": "old.pid"},
        server_metrics=False,
    )
    check_stored_settings("s.db", 1, spec)
    assert primary_metric(spec) == "throughput"
    names = [m.name for m in spec_metrics(spec)]
    assert names[:2] == ["wall", "throughput"] and "connect_p99" in names
    assert "server_cpu" not in names and "cpu" not in names
    assert spec.variant("new").command[:3] == ("cw_load", "--target", "127.0.0.1:8081")
    # Written back as it was read: the same JSON, key for key and in the same order.
    assert json.dumps(spec.to_dict()) == STORED_LOAD


def test_a_plain_experiment_stored_with_a_null_load_reads_back_without_one(
    tmp_path: Path,
) -> None:
    from cutaway.probes.core import primary_metric, spec_metrics

    plain = json.loads(STORED_LOAD)
    plain["load"] = None
    plain["variants"] = [{**v, "command": ["true"]} for v in plain["variants"]]
    spec = _stored_as(tmp_path, json.dumps(plain))
    assert load_settings(spec) is None and spec.plugin_tables == ()
    assert primary_metric(spec) == "wall"
    assert [m.name for m in spec_metrics(spec)][:4] == ["wall", "user", "sys", "cpu"]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"connections": 0}, "load.connections: 0 is below 1"),
        ({"protocol": "ftp"}, "load.protocol: 'ftp' is not one of http, memcached"),
        ({"targets": {"old": "https://x/"}}, "load.targets.old: https:// is not supported"),
        ({"server_metrics": "yes"}, "load.server_metrics: 'yes' is not true or false"),
    ],
)
def test_a_damaged_stored_load_table_is_named_as_the_store_s_damage(
    tmp_path: Path, change: dict[str, object], named: str
) -> None:
    from cutaway.probes.core import check_stored_settings
    from cutaway.store import DamagedStoreError

    damaged = json.loads(STORED_LOAD)
    damaged["load"].update(change)
    spec = _stored_as(tmp_path, json.dumps(damaged))
    with pytest.raises(DamagedStoreError) as caught:
        check_stored_settings("s.db", 1, spec)
    assert "experiments.spec_json" in str(caught.value) and named in str(caught.value)


@pytest.mark.parametrize("primary", ["nope", "", "wall\x1b[31m"])
def test_a_stored_primary_metric_that_is_no_metric_is_named_as_the_store_s_damage(
    tmp_path: Path, primary: str
) -> None:
    """cutaway run refuses it; read back, it judged no metric at full alpha, and a report
    showed an empty primary table and exited 0."""
    from cutaway.probes.core import check_stored_settings
    from cutaway.store import DamagedStoreError

    plain = json.loads(STORED_LOAD)
    plain["load"] = None
    plain["primary_metric"] = primary
    spec = _stored_as(tmp_path, json.dumps(plain))
    with pytest.raises(DamagedStoreError) as caught:
        check_stored_settings("s.db", 1, spec)
    assert f"experiments.spec_json: primary_metric: {primary!r} is no metric" in str(caught.value)
    plain["primary_metric"] = "cpu"
    (tmp_path / "cpu").mkdir()
    check_stored_settings("s.db", 1, _stored_as(tmp_path / "cpu", json.dumps(plain)))
