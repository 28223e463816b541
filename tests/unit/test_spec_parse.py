"""Valid experiment files -> the Spec they describe (errors are in test_spec_errors.py)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from cutaway.model import Hooks
from cutaway.spec import SpecError, load_spec, parse_spec


def test_minimal_file_gets_defaults_and_one_implicit_variant() -> None:
    spec = parse_spec('name = "lookups"\ncommand = "getent passwd root"\n')
    assert spec.name == "lookups"
    assert [v.name for v in spec.variants] == ["lookups"]
    assert spec.variants[0].command == ("getent", "passwd", "root")
    assert spec.variants[0].shell is False
    assert spec.baseline == "lookups"
    assert (spec.rounds, spec.warmup_rounds) == (10, 1)
    assert (spec.margin, spec.confidence) == (0.005, 0.95)
    assert (spec.timeout_seconds, spec.until_width, spec.max_time_seconds) == (None, None, None)


def test_a_file_without_a_seed_gets_a_fresh_one_each_time_it_is_read() -> None:
    # Experiments sharing a seed run the same orders of variants: an effect tied to the sequence
    # of runs would offset each of them alike.
    text = 'name = "lookups"\ncommand = "getent passwd root"\n'
    seeds = {parse_spec(text).seed for _ in range(5)}
    assert len(seeds) == 5 and all(0 <= seed < 2**31 for seed in seeds)
    assert parse_spec(text + "seed = 0\n").seed == 0


def test_every_top_level_setting_is_read() -> None:
    spec = parse_spec(
        textwrap.dedent(
            """
            version = 1
            name = "all"
            command = ["sleep", "0"]
            rounds = 30
            warmup_rounds = 0
            timeout = "250ms"
            margin = "0.5%"
            confidence = 0.9
            until = "1%"
            max_time = "2m"
            seed = 7
            """
        )
    )
    assert spec.rounds == 30
    assert spec.warmup_rounds == 0
    assert spec.timeout_seconds == pytest.approx(0.25)
    assert spec.margin == pytest.approx(0.005)
    assert spec.confidence == 0.9
    assert spec.until_width == pytest.approx(0.01)
    assert spec.max_time_seconds == 120.0
    assert spec.seed == 7
    assert spec.variants[0].command == ("sleep", "0")


def test_load_spec_keeps_path_and_exact_text(tmp_path: Path) -> None:
    path = tmp_path / "experiment.toml"
    text = '\ufeffname = "crlf"\r\ncommand = "true"\r\n'
    path.write_bytes(text.encode("utf-8"))
    spec = load_spec(path)
    assert spec.source_path == str(path)
    assert spec.source_text == text


def test_error_without_a_path_names_the_line() -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec('name = "x"\ncommand = "true"\nrounds = -1\n')
    assert caught.value.path is None
    assert str(caught.value) == "line 3: rounds: expected an integer >= 1, found -1"


def test_variants_share_the_top_level_command() -> None:
    spec = parse_spec(
        textwrap.dedent(
            """
            name = "nscd"
            command = "getent passwd alice bob"
            baseline = "with nscd"

            [[variants]]
            name = "files"
            env = { LOOKUP = "files", DEPTH = 3 }

            [[variants]]
            name = "with nscd"
            setup = "nscd -F &"
            cleanup = "pkill nscd"

            [[variants]]
            name = "own"
            command = "getent group root"
            cwd = "/tmp"
            """
        )
    )
    files, nscd, own = spec.variants
    assert files.command == nscd.command == ("getent", "passwd", "alice", "bob")
    assert dict(files.env) == {"LOOKUP": "files", "DEPTH": "3"}
    assert nscd.hooks == Hooks(setup="nscd -F &", cleanup="pkill nscd")
    assert own.command == ("getent", "group", "root")
    assert own.cwd == "/tmp"
    assert spec.baseline == "with nscd"


def test_shell_commands_stay_strings_and_variants_may_override_shell() -> None:
    spec = parse_spec(
        textwrap.dedent(
            """
            name = "x"
            shell = true
            command = "seq 1000 | sort -n > /dev/null"

            [[variants]]
            name = "piped"

            [[variants]]
            name = "direct"
            shell = false
            command = "sort --version"
            """
        )
    )
    piped, direct = spec.variants
    assert (piped.shell, piped.command) == (True, "seq 1000 | sort -n > /dev/null")
    assert (direct.shell, direct.command) == (False, ("sort", "--version"))


MATRIX_EXAMPLE = """
name = "mail queue"
command = "sendmail -odq -t"

[matrix]
senders = [1, 10]
queue_dirs = [1, 10]

[[variants]]
name = "queue"
command = ["send-mails", "--senders", "{senders}", "--dirs={queue_dirs}"]
env = { SENDERS = "{senders}" }
cwd = "/var/spool/q{queue_dirs}"
setup = "mkdir -p /tmp/q{queue_dirs}"
prepare = "echo {senders} > /tmp/senders"
conclude = "sync"
cleanup = "rm -rf /tmp/q{queue_dirs}"
"""


def test_matrix_expands_every_combination_first_parameter_slowest() -> None:
    spec = parse_spec(MATRIX_EXAMPLE)
    assert [v.name for v in spec.variants] == [
        "queue[senders=1,queue_dirs=1]",
        "queue[senders=1,queue_dirs=10]",
        "queue[senders=10,queue_dirs=1]",
        "queue[senders=10,queue_dirs=10]",
    ]
    assert [dict(v.params) for v in spec.variants] == [
        {"senders": "1", "queue_dirs": "1"},
        {"senders": "1", "queue_dirs": "10"},
        {"senders": "10", "queue_dirs": "1"},
        {"senders": "10", "queue_dirs": "10"},
    ]
    assert spec.baseline == "queue[senders=1,queue_dirs=1]"


def test_matrix_substitutes_command_env_cwd_and_hooks() -> None:
    variant = parse_spec(MATRIX_EXAMPLE).variants[2]  # senders=10, queue_dirs=1
    assert variant.command == ("send-mails", "--senders", "10", "--dirs=1")
    assert dict(variant.env) == {"SENDERS": "10"}
    assert variant.cwd == "/var/spool/q1"
    assert variant.hooks == Hooks(
        setup="mkdir -p /tmp/q1",
        prepare="echo 10 > /tmp/senders",
        conclude="sync",
        cleanup="rm -rf /tmp/q1",
    )


def test_matrix_without_variants_names_the_implicit_variant_by_its_parameters() -> None:
    spec = parse_spec(
        'name = "q"\ncommand = "run --senders {senders} -q {queue_dirs}"\n'
        "[matrix]\nsenders = [1, 10]\nqueue_dirs = [1, 10]\n"
    )
    assert [v.name for v in spec.variants][:2] == [
        "senders=1,queue_dirs=1",
        "senders=1,queue_dirs=10",
    ]
    assert spec.variants[3].command == ("run", "--senders", "10", "-q", "10")


def test_placeholders_in_a_name_make_the_name() -> None:
    spec = parse_spec(
        'name = "q"\ncommand = "true"\n[matrix]\nfast = [true, false]\nscale = [0.5]\n'
        '[[variants]]\nname = "fast={fast} x{scale}"\n'
    )
    assert [v.name for v in spec.variants] == ["fast=true x0.5", "fast=false x0.5"]
    assert dict(spec.variants[1].params) == {"fast": "false", "scale": "0.5"}


def test_doubled_braces_are_literal_under_a_matrix() -> None:
    spec = parse_spec(
        textwrap.dedent(
            """
            name = "awk"
            shell = true
            command = "awk '{{print $1}}' /etc/passwd{{n}} | head -{n}; awk '{ print }' x"

            [matrix]
            n = [5]
            """
        )
    )
    assert (
        spec.variants[0].command == "awk '{print $1}' /etc/passwd{n} | head -5; awk '{ print }' x"
    )


def test_without_a_matrix_braces_are_left_alone() -> None:
    spec = parse_spec(
        'name = "x"\nshell = true\ncommand = "echo ${HOME} {{x}} | awk \'{print}\'"\n'
    )
    assert spec.variants[0].command == "echo ${HOME} {{x}} | awk '{print}'"


def test_empty_hooks_are_no_hooks() -> None:
    spec = parse_spec('name = "x"\n[[variants]]\nname = "a"\ncommand = "true"\nsetup = ""\n')
    assert spec.variants[0].hooks == Hooks()


def test_every_example_in_the_format_documentation_is_valid() -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "experiment-file.md"
    blocks = re.findall(r"```toml\n(.*?)```", doc.read_text(), re.DOTALL)
    assert len(blocks) >= 3
    specs = [parse_spec(block) for block in blocks]
    matrix_spec = next(spec for spec in specs if len(spec.variants) == 4)
    assert matrix_spec.variants[1].name == "queue[senders=1,queue_dirs=10]"
    assert matrix_spec.variants[1].command == "./send-mails --senders 1 --queue-root /tmp/mq10"
