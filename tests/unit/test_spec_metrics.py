"""``[[metrics]]`` tables and the --metric/--metric-regex options: what they become, and every
mistake named by file, line and key before anything runs."""

from __future__ import annotations

import textwrap

import pytest

from cutaway.model import MetricSpec
from cutaway.spec import SpecError, apply_overrides, parse_spec, quick_spec
from cutaway.spec.metrics import read_metric_option

HEAD = 'name = "m"\ncommand = "true"\n'


def parse(metrics: str) -> tuple[MetricSpec, ...]:
    return parse_spec(HEAD + textwrap.dedent(metrics), "exp.toml").metrics


def error(metrics: str) -> str:
    with pytest.raises(SpecError) as caught:
        parse(metrics)
    return str(caught.value)


def test_every_source_with_its_defaults() -> None:
    metrics = parse(
        """
        [[metrics]]
        name = "rps"
        source = "output"
        parser = "ab"
        field = "requests_per_second"

        [[metrics]]
        name = "ops"
        source = "output"
        pattern = 'ops: (?P<value>\\d+)'
        stream = "stderr"
        better = "higher"
        unit = "ops"

        [[metrics]]
        name = "entries"
        source = "command"
        command = "netstat -dn | wc -l"

        [[metrics]]
        name = "db"
        source = "file"
        path = "/var/lib/db"
        series = true

        [[metrics]]
        name = "server_rss"
        source = "process"
        pid_file = "/run/server.pid"
        stat = "rss"
        interval = "20ms"
        """
    )
    rps, ops, entries, db, rss = metrics
    assert (rps.unit, rps.better, rps.field) == ("requests/s", "higher", "requests_per_second")
    assert (ops.stream, ops.unit, ops.better) == ("stderr", "ops", "higher")
    assert (entries.source, entries.better, entries.unit) == ("command", "lower", "count")
    assert (db.unit, db.series) == ("bytes", True)
    assert (rss.unit, rss.stat, rss.interval_seconds) == ("bytes", "rss", 0.02)
    spec = parse_spec(HEAD + '[[metrics]]\nname = "x"\nsource = "command"\ncommand = "echo 1"\n')
    assert [m.name for m in spec.all_metrics()][-1] == "x"
    assert MetricSpec.from_dict(rss.to_dict()) == rss


def test_a_parser_field_direction_can_be_overridden() -> None:
    (p99,) = parse(
        '[[metrics]]\nname = "p"\nsource = "output"\nparser = "wrk"\nfield = "p99_ms"\n'
        'better = "higher"\n'
    )
    assert (p99.unit, p99.better) == ("ms", "higher")


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('name = "r"\nsource = "output"\npattern = "rps ([0-9.]+)"', "group named value"),
        ('name = "r"\nsource = "output"\npattern = "(?P<value>[0-9"', "does not compile"),
        ('name = "r"\nsource = "output"\nparser = "siege"\nfield = "x"', "a parser: ab, wrk"),
        ('name = "r"\nsource = "output"\nparser = "ab"\nfield = "rps"', "ab has no field 'rps'"),
        ('name = "r"\nsource = "output"\nparser = "ab"', "missing required key"),
        ('name = "r"\nsource = "outpt"', 'one of "output", "command"'),
        ('name = "r"\nsource = "command"\ncommand = "x"\nbetter = "up"', '"lower" or "higher"'),
        ('name = "r"\nsource = "command"\npath = "/x"', "does not apply to source 'command'"),
        ('name = "r"\nsource = "process"\nstat = "rss"', "by one of pid_file"),
        ('name = "r"\nsource = "process"\nport = 99999\nstat = "rss"', "a TCP port"),
        ('name = "r"\nsource = "process"\nport = 80\nstat = "mem"', '"cpu", "rss"'),
        ('name = "wall"\nsource = "command"\ncommand = "x"', "whole-process metric"),
        ('name = "r"\nsource = "file"\npath = "/x"\ncolour = 1', "unknown key"),
    ],
)
def test_mistakes_name_the_file_line_and_key(table: str, expected: str) -> None:
    message = error("[[metrics]]\n" + table + "\n")
    assert message.startswith("exp.toml:")
    assert "metrics[0]." in message and expected in message


def test_the_line_of_a_bad_pattern() -> None:
    message = error('[[metrics]]\nname = "r"\nsource = "output"\npattern = "x"\n')
    assert message.startswith("exp.toml:6: metrics[0].pattern:")


def test_duplicate_names() -> None:
    table = '[[metrics]]\nname = "r"\nsource = "command"\ncommand = "echo 1"\n'
    assert 'duplicate metric name "r"' in error(table + table)


def test_options() -> None:
    rps = read_metric_option("rps=output:ab:requests_per_second")
    assert (rps.parser, rps.field, rps.better) == ("ab", "requests_per_second", "higher")
    cmd = read_metric_option("entries:higher:entries=command:netstat -dn | wc -l")
    assert (cmd.command, cmd.better, cmd.unit) == ("netstat -dn | wc -l", "higher", "entries")
    proc = read_metric_option("server=process:rss:port=8080")
    assert (proc.stat, proc.port) == ("rss", 8080)
    named = read_metric_option("server=process:cpu:name=nginx")
    assert named.process_name == "nginx"
    regex = read_metric_option("ops:higher=ops=(?P<value>\\d+)", "--metric-regex")
    assert (regex.pattern, regex.better) == ("ops=(?P<value>\\d+)", "higher")


@pytest.mark.parametrize(
    ("text", "option", "expected"),
    [
        ("rps", "--metric", "expected NAME"),
        ("rps=outpt:ab:x", "--metric", 'unknown source "outpt"'),
        ("rps=output:ab:rps", "--metric", "field: ab has no field 'rps'"),
        ("s=process:rss:host=x", "--metric", "pid_file=PATH|name=NAME|port=PORT"),
        ("rps=rps ([0-9]+)", "--metric-regex", "group named value"),
        ("rps:up=command:echo 1", "--metric", "better:"),
    ],
)
def test_bad_options(text: str, option: str, expected: str) -> None:
    with pytest.raises(SpecError) as caught:
        read_metric_option(text, option)
    assert str(caught.value).startswith(f"{option}: ") and expected in str(caught.value)


def test_options_add_to_quick_mode_and_files() -> None:
    spec = apply_overrides(
        quick_spec(["true"]),
        {"--metric": ["n=command:echo 1"], "--metric-regex": ["r=x(?P<value>1)"]},
    )
    assert [m.name for m in spec.metrics] == ["n", "r"]
    with pytest.raises(SpecError, match='duplicate metric name "n"'):
        apply_overrides(spec, {"--metric": ["n=command:echo 2"]})


def test_a_parser_that_is_not_a_name_is_refused_at_its_key() -> None:
    """Found by the spec fuzzer: `parser = []` raised TypeError (a list is no dict key)."""
    table = '[[metrics]]\nname = "rps"\nsource = "output"\nparser = []\nfield = "x"\n'
    message = error(table)
    assert message.startswith("exp.toml:") and "metrics[0].parser" in message
