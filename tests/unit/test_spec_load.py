"""The experiment file's [load] section and quick mode's --url: each variant's run becomes a
load phase by the generator against its target; every mistake names file, line and key (or
the option)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from cutaway.cli import commands as cli
from cutaway.probes.core import primary_metric, spec_metrics
from cutaway.probes.load.experiment_file import add_quick_arguments, quick_load, quick_load_spec
from cutaway.probes.load.settings import LoadTarget, load_settings
from cutaway.spec import SpecError, parse_spec

SERVERS = """\
name = "servers"
rounds = 3

[load]
connections = 50
rate = 2000
duration = "2s"
warmup = "500ms"

[[variants]]
name = "old"
target = "http://127.0.0.1:8080/index.html"
setup = "nginx -c old.conf"
cleanup = "kill $(cat old.pid)"
pid_file = "old.pid"

[[variants]]
name = "new"
target = "127.0.0.1:8081"
"""


def test_each_variant_runs_the_generator_against_its_own_target() -> None:
    spec = parse_spec(SERVERS, "servers.toml")
    load = load_settings(spec)
    assert load is not None and load.mode == "open"
    assert load.targets == {"old": "http://127.0.0.1:8080/index.html", "new": "127.0.0.1:8081"}
    assert load.pid_files == {"old": "old.pid"}
    old = spec.variant("old")
    assert old.command[:5] == ("cw_load", "--target", "127.0.0.1:8080", "--protocol", "http")
    assert "--rate" in old.command and "--duration" in old.command
    assert old.command[old.command.index("--path") + 1] == "/index.html"
    assert old.hooks.setup == "nginx -c old.conf"
    metrics = [m.name for m in spec_metrics(spec)]
    assert metrics[:3] == ["wall", "throughput", "errors"] and "server_rss_peak" in metrics
    assert primary_metric(spec) == "throughput"
    assert next(m for m in spec_metrics(spec) if m.name == "throughput").better == "higher"


def test_each_condition_loads_its_variants_server() -> None:
    """[[conditions]] copy each variant as VARIANT/CONDITION: every copy keeps its variant's
    target and pid file (the same server serves it in every condition)."""
    spec = parse_spec(SERVERS + '[[conditions]]\nname = "cold"\n[[conditions]]\nname = "warm"\n')
    load = load_settings(spec)
    assert load is not None
    assert [v.name for v in spec.variants] == ["old/cold", "old/warm", "new/cold", "new/warm"]
    assert load.target("old/warm") == load.target("old/cold")
    assert load.target("new/cold").address == "127.0.0.1:8081"
    assert load.pid_files == {"old/cold": "old.pid", "old/warm": "old.pid"}


def test_a_target_in_load_takes_matrix_parameters() -> None:
    text = """\
name = "sizes"
[matrix]
port = [9001, 9002]
[load]
target = "http://127.0.0.1:{port}/"
connections = 4
"""
    load = load_settings(parse_spec(text))
    assert load is not None
    assert sorted(load.targets.values()) == [
        "http://127.0.0.1:9001/",
        "http://127.0.0.1:9002/",
    ]


@pytest.mark.parametrize(
    ("old", "new", "key", "words"),
    [
        ("rate = 2000", "rate = -1", "load.rate", "rate in requests per second"),
        ("connections = 50", "connections = 0", "load.connections", ">= 1"),
        ("rate = 2000", 'protocol = "gopher"', "load.protocol", "http, memcached"),
        ("rate = 2000", "requests = 100", "load.requests", "duration or requests"),
        ('warmup = "500ms"', 'warmup = "soon"', "load.warmup", "duration"),
        ("rate = 2000", 'colour = "red"', "load.colour", "unknown key"),
    ],
)
def test_load_settings_are_checked_with_file_line_and_key(
    old: str, new: str, key: str, words: str
) -> None:
    with pytest.raises(SpecError) as error:
        parse_spec(SERVERS.replace(old, new), "servers.toml")
    assert error.value.key == key and error.value.path == "servers.toml"
    assert error.value.line is not None and words in error.value.message


def test_a_bad_target_names_its_variant() -> None:
    with pytest.raises(SpecError) as error:
        parse_spec(SERVERS.replace("127.0.0.1:8081", "127.0.0.1:80800"), "servers.toml")
    assert error.value.key == "variants[1].target" and error.value.line == 19
    assert "not a TCP port" in error.value.message


def test_a_variant_without_target_is_refused() -> None:
    with pytest.raises(SpecError) as error:
        parse_spec(SERVERS.replace('target = "127.0.0.1:8081"\n', ""), "servers.toml")
    assert error.value.key == "variants[1].target" and "no target" in error.value.message


def test_a_command_has_no_place_in_a_load_experiment() -> None:
    with pytest.raises(SpecError) as error:
        parse_spec(SERVERS.replace('name = "new"', 'name = "new"\ncommand = "curl x"'))
    assert error.value.key == "variants[1].command" and "load phase" in error.value.message


def test_a_target_without_load_is_refused() -> None:
    text = 'name = "x"\n[[variants]]\nname = "a"\ncommand = "true"\ntarget = "127.0.0.1:1"\n'
    with pytest.raises(SpecError) as error:
        parse_spec(text)
    assert error.value.key == "variants[0].target" and "[load]" in error.value.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://127.0.0.1:8080/", LoadTarget("127.0.0.1", 8080, "/", "http")),
        ("http://127.0.0.1:8080/a/b?c=d", LoadTarget("127.0.0.1", 8080, "/a/b?c=d", "http")),
        ("127.0.0.1:11211", LoadTarget("127.0.0.1", 11211, "/", None)),
        ("http://localhost", LoadTarget("localhost", 80, "/", "http")),
    ],
)
def test_targets_parse(text: str, expected: LoadTarget) -> None:
    assert LoadTarget.parse(text) == expected


@pytest.mark.parametrize("text", ["https://x:1/", "127.0.0.1", "127.0.0.1:0", "a b:1", ":80"])
def test_bad_targets_say_why(text: str) -> None:
    with pytest.raises(ValueError):
        LoadTarget.parse(text)


def test_quick_mode_makes_one_server_variant_per_url() -> None:
    settings = quick_load(
        ["http://127.0.0.1:8080/", "http://127.0.0.1:8081/"], rate=2000.0, duration="5s"
    )
    spec = quick_load_spec(
        ["http://127.0.0.1:8080/", "http://127.0.0.1:8081/"], ["old", "new"], settings
    )
    assert [v.name for v in spec.variants] == ["old", "new"] and spec.baseline == "old"
    load = load_settings(spec)
    assert load is not None and load.rate == 2000.0
    assert load.duration_seconds == 5.0
    assert spec.variant("new").command[2] == "127.0.0.1:8081"


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"rate": 0.0}, "--rate"),
        ({"connections": 0}, "--connections"),
        ({"duration": "forever"}, "--duration"),
        ({"protocol": "ftp"}, "--protocol"),
    ],
)
def test_quick_mode_errors_name_the_option(options: dict[str, object], key: str) -> None:
    with pytest.raises(SpecError) as error:
        quick_load(["http://127.0.0.1:8080/"], **options)  # type: ignore[arg-type]
    assert error.value.key == key


def _load_options() -> list[tuple[str, list[str]]]:
    """Every option quick mode's load phase adds but --url (and --max-rate-under, a run mode of
    its own), each with a value that is its type's zero (a flag with none)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_quick_arguments(parser)
    return [
        (action.option_strings[0], [] if action.nargs == 0 else ["0"])
        for action in parser._actions
        if action.dest not in ("url", "max_rate_under")
    ]


@pytest.mark.parametrize(("option", "value"), _load_options())
def test_a_load_option_without_url_is_refused_and_nothing_stored(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, option: str, value: list[str]
) -> None:
    """Even one whose value is 0 (``--connections 0``, ``--rate 0``), which is not its default."""
    store = tmp_path / "store.db"
    argv = ["run", "-c", "true", "--rounds", "2", "--db", str(store), option, *value]
    assert cli.main(argv) == 2
    assert f"{option} only apply to --url servers" in capsys.readouterr().err
    assert not store.exists()


def test_quick_mode_names_match_urls() -> None:
    settings = quick_load(["127.0.0.1:1", "127.0.0.1:2"])
    with pytest.raises(SpecError) as error:
        quick_load_spec(["127.0.0.1:1", "127.0.0.1:2"], ["only one"], settings)
    assert error.value.key == "--name"
    with pytest.raises(SpecError) as error:
        quick_load(["http://127.0.0.1:99999/"])
    assert error.value.key == "--url"


def test_a_declared_metric_may_not_take_a_load_metrics_name() -> None:
    text = SERVERS + '\n[[metrics]]\nname = "server_cpu"\nsource = "command"\ncommand = "echo 1"\n'
    with pytest.raises(SpecError) as error:
        parse_spec(text, "servers.toml")
    assert error.value.key == "metrics[0].name" and "load phase" in error.value.message
    # Without [load], the name is the user's (a process metric of their own server).
    metric = '[[metrics]]\nname = "server_cpu"\nsource = "command"\ncommand = "echo 1"\n'
    plain = f'name = "x"\ncommand = "true"\n{metric}'
    assert parse_spec(plain).metrics[0].name == "server_cpu"
