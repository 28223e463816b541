"""The command line, in process: suggestions, no abbreviations, hyperfine's quick-mode options
translated into the Spec, styles and the store's location. Runs are in
tests/integration/test_cli_options.py."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from cutaway.cli import commands as cli
from cutaway.cli import parser as parser_module
from cutaway.cli.progress import TerminalProgress
from cutaway.model import Spec


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as caught:
        cli.main(list(argv))
    assert caught.value.code == 2
    return capsys.readouterr().err


def spec_of(*argv: str) -> Spec:
    return cli.spec_from_args(cli.parse_arguments(["run", *argv]))


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["run", "-c", "true", "--rnuds", "5"], "--rounds"),
        (["run", "-c", "true", "--rnuds=5"], "--rounds"),
        (["run", "-c", "true", "--setpu", "make"], "--setup"),
        (["run", "-c", "true", "--show-ouput"], "--show-output"),
        (["report", "--fromat", "json"], "--format"),
        (["list", "--bd", "x.db"], "--db"),
    ],
)
def test_a_typo_gets_a_suggestion(
    capsys: pytest.CaptureFixture[str], argv: list[str], suggestion: str
) -> None:
    err = usage_error(capsys, *argv)
    assert f"did you mean {suggestion}?" in err
    assert "unrecognized argument" in err


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["reprot"], "report"),
        (["report", "--format", "jsno"], "json"),
        (["export", "--format", "flamegrph"], "flamegraph"),
    ],
)
def test_a_mistyped_choice_gets_a_suggestion_before_the_short_usage(
    capsys: pytest.CaptureFixture[str], argv: list[str], suggestion: str
) -> None:
    err = usage_error(capsys, *argv)
    error, usage = err.splitlines()
    assert "invalid choice" in error
    assert error.endswith(f"(did you mean {suggestion}?)")
    assert usage.startswith("usage: cutaway")


def test_a_choice_far_from_every_one_gets_no_suggestion(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert "did you mean" not in usage_error(capsys, "zzzzzz")


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "-c", "true", "--rou", "5"],
        ["run", "-c", "true", "--ignore"],
        ["report", "--form", "json"],
        ["export", "--form", "json"],
        ["list", "--d", "x.db"],
        ["--vers"],
    ],
)
def test_abbreviations_are_not_accepted(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    usage_error(capsys, *argv)


def test_no_parser_allows_abbreviations() -> None:
    parser = cli.build_parser()
    assert parser.allow_abbrev is False
    subparsers = parser_module._subparsers(parser)
    assert sorted(subparsers) == [
        "bisect",
        "check",
        "compare",
        "export",
        "history",
        "list",
        "publish",
        "report",
        "run",
    ]
    assert all(sub.allow_abbrev is False for sub in subparsers.values())


@pytest.mark.parametrize(
    ("argv", "commands"),
    [
        (["run", "sleep 0.01"], ["sleep 0.01"]),
        (["run", "sleep 0.01", "sleep 0.02"], ["sleep 0.01", "sleep 0.02"]),
        (["run", "-r", "5", "true", "--warmup", "0", "false"], ["true", "false"]),
        (["run", "./prog"], ["./prog"]),
    ],
)
def test_commands_as_positional_arguments_as_hyperfine_takes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], commands: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prog").write_text("#!/bin/sh\n")
    (tmp_path / "prog").chmod(0o755)  # a program is a command, even where it exists
    args = cli.parse_arguments(argv)
    assert args.cmd == commands and args.file is None


def test_an_existing_file_that_is_no_program_is_an_experiment_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "experiment").write_text("")
    assert cli.parse_arguments(["run", "experiment"]).file == "experiment"
    assert cli.parse_arguments(["run", "missing.toml"]).file == "missing.toml"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["run", "sleep 1", "-c", "rm x"], "hyperfine's -c, --cleanup, is --cleanup here"),
        (["run", "--sort", "auto", "true"], "--sort is hyperfine's: cutaway ranks variants"),
        (["run", "-u", "millisecond", "true"], "-u is hyperfine's: cutaway picks each table"),
        (["run", "--time-unit=second", "true"], "--time-unit is hyperfine's"),
        (["run", "-M", "20", "true"], "-M is hyperfine's: cutaway runs exactly --rounds"),
        (["run", "-i=crash", "true"], "-i=crash: cutaway counts a run that exits non-zero"),
        (["run", "--rnuds", "3", "true"], "unrecognized argument --rnuds (did you mean --rounds?)"),
        (["run", "--tim-unit", "ms", "true"], "--tim-unit (did you mean --time-unit?)"),
    ],
)
def test_hyperfine_options_that_differ_are_said_first_with_a_short_usage(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.parse_arguments(argv)
    assert stopped.value.code == 2
    first, usage, *rest = capsys.readouterr().err.splitlines()
    assert said in first and usage.startswith("usage: cutaway") and rest == []


def test_hyperfine_aliases_mean_what_they_mean_there() -> None:
    hooks = ["-s", "make", "-p", "sync", "-C", "rm -f x"]
    exports = ["--export-orgmode", "t.org"]
    args = cli.parse_arguments(
        [
            "run",
            "-r",
            "7",
            "-w",
            "2",
            *hooks,
            "--command-name",
            "a",
            "-i=non-zero",
            "sleep 0.01",
            *exports,
        ]
    )
    assert (args.rounds, args.warmup, args.name, args.ignore_failure) == (7, 2, ["a"], True)
    assert (args.setup, args.prepare, args.conclude) == (["make"], ["sync"], ["rm -f x"])
    assert args.export_orgmode == "t.org" and args.cmd == ["sleep 0.01"]
    assert cli.parse_arguments(["run", "-m", "12", "true"]).rounds == 12
    assert cli.parse_arguments(["run", "--runs", "3", "true"]).rounds == 3


def test_a_missing_toml_file_is_still_no_such_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "nope.toml"]) == 2
    assert "nope.toml: no such file" in capsys.readouterr().err


def test_hooks_given_once_or_per_command() -> None:
    spec = spec_of(
        "-c", "true", "-c", "false", "--setup", "make", "--prepare", "p1", "--prepare", "p2"
    )
    assert [v.hooks.setup for v in spec.variants] == ["make", "make"]
    assert [v.hooks.prepare for v in spec.variants] == ["p1", "p2"]
    spec = spec_of("-c", "true", "--conclude", "c", "--cleanup", "rm -f x")
    assert (spec.variants[0].hooks.conclude, spec.variants[0].hooks.cleanup) == ("c", "rm -f x")


def test_hooks_in_wrong_numbers_are_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "-c", "a", "-c", "b", "-c", "c", "--setup", "x", "--setup", "y"]
    assert cli.main(argv) == 2
    assert "--setup" in capsys.readouterr().err


def test_parameter_scan_and_list_expand_in_order() -> None:
    spec = spec_of(
        "-c", "sleep 0.0{N}", "--parameter-scan", "N", "1", "5", "--parameter-step-size", "2"
    )
    assert [v.name for v in spec.variants] == ["N=1", "N=3", "N=5"]
    assert spec.variants[2].command == ("sleep", "0.05")
    spec = spec_of(
        "-c", "gzip -{l} -c {f}", "-L", "f", "a,b", "-P", "l", "1", "2", "-n", "gz{l} {f}"
    )
    assert [v.name for v in spec.variants] == ["gz1 a", "gz2 a", "gz1 b", "gz2 b"]  # f slowest
    assert spec.variants[1].command == ("gzip", "-2", "-c", "a")


def test_step_size_without_a_scan(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "-c", "true", "--parameter-step-size", "2"]) == 2
    assert "needs --parameter-scan" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "shell", "command"),
    [
        (["--shell"], True, "echo hi"),
        (["--shell", "sh"], True, "echo hi"),
        (["--shell=bash"], False, ("bash", "-c", "echo hi")),
        (["--shell", "bash"], False, ("bash", "-c", "echo hi")),
        (["-S", "bash"], False, ("bash", "-c", "echo hi")),
        (["--shell=none"], False, ("echo", "hi")),
        (["-N"], False, ("echo", "hi")),
        ([], False, ("echo", "hi")),
    ],
)
def test_shell_choices(argv: list[str], shell: bool, command: object) -> None:
    spec = spec_of("-c", "echo hi", *argv)
    assert (spec.variants[0].shell, spec.variants[0].command) == (shell, command)


def test_a_bare_shell_takes_only_a_shell_as_its_value() -> None:
    assert cli.normalize_shell(["run", "--shell", "-c", "x"]) == ["run", "--shell=sh", "-c", "x"]
    assert cli.normalize_shell(["run", "--shell", "zsh"]) == ["run", "--shell=zsh"]
    assert cli.normalize_shell(["run", "--shell", "e.toml"]) == ["run", "--shell=sh", "e.toml"]
    assert cli.normalize_shell(["run", "--shell"]) == ["run", "--shell=sh"]
    assert cli.normalize_shell(["run", "--", "--shell"]) == ["run", "--", "--shell"]


def test_quick_options_with_a_file_are_bad_usage(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "e.toml"
    path.write_text('name = "x"\ncommand = "true"\n')
    assert cli.main(["run", str(path), "--setup", "make", "--shell"]) == 2
    err = capsys.readouterr().err
    assert "--shell/-N, --setup only apply to -c commands" in err


def test_output_and_show_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert spec_of("-c", "true").variants[0].stdout == "null"
    assert spec_of("-c", "true", "--show-output").variants[0].stdout == "inherit"
    assert spec_of("-c", "true", "--output", "pipe").variants[0].stdout == "pipe"
    assert spec_of("-c", "true", "--output=out.txt").variants[0].stdout == str(tmp_path / "out.txt")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--output", "no/such/dir/x"], "--output: no such directory"),
        (["--input", "missing.txt"], '--input: no such file: "missing.txt"'),
        (["--show-output", "--output", "pipe"], "not both"),
    ],
)
def test_input_and_output_are_checked_before_anything_runs(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    words: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "-c", "cat", *argv]) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / ".cutaway").exists()


def test_input_and_ignore_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("x")
    spec = spec_of("-c", "cat", "--input", "in.txt", "--ignore-failure")
    assert spec.variants[0].stdin == str(tmp_path / "in.txt")
    assert spec.ignore_failure is True
    assert spec_of("-c", "cat").ignore_failure is False
    assert spec_of("-c", "cat", "-i").ignore_failure is True


def test_file_overrides_for_input_output_and_ignore_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("x")
    path = tmp_path / "e.toml"
    path.write_text('name = "x"\ncommand = "cat"\n')
    spec = spec_of(str(path), "--input", "in.txt", "--show-output", "--ignore-failure")
    variant = spec.variants[0]
    assert (variant.stdin, variant.stdout, spec.ignore_failure) == (
        str(tmp_path / "in.txt"),
        "inherit",
        True,
    )


@pytest.mark.parametrize(
    ("argv", "color", "bar", "lines"),
    [
        ([], "auto", None, True),
        (["--style", "basic"], "never", False, True),
        (["--style", "full"], "always", True, True),
        (["--style", "nocolor"], "never", True, True),
        (["--style", "color"], "always", False, True),
        (["--style", "none"], "never", False, False),
        (["--style", "full", "--color", "never"], "never", True, True),
    ],
)
def test_styles(argv: list[str], color: str, bar: bool | None, lines: bool) -> None:
    args = cli.parse_arguments(["run", "-c", "true", *argv])
    _, style_bar, style_lines = cli.STYLES[args.style]
    assert (args.color or cli.STYLES[args.style][0], style_bar, style_lines) == (color, bar, lines)


def test_progress_lines_follow_the_style() -> None:
    stream = io.StringIO()
    with TerminalProgress(stream, bar=False, lines=False) as progress:
        progress.say("a notice")
    assert stream.getvalue() == ""
    stream = io.StringIO()
    with TerminalProgress(stream, bar=False) as progress:
        progress.say("a notice")
    assert stream.getvalue() == "a notice\n"


def test_quiet() -> None:
    assert cli.parse_arguments(["run", "-c", "true", "-q"]).quiet is True
    assert cli.parse_arguments(["run", "-c", "true", "--quiet"]).quiet is True


def test_color_follows_color_then_style(monkeypatch: pytest.MonkeyPatch) -> None:
    def color(*argv: str) -> bool:
        return cli.color_wanted(cli.parse_arguments(["report", *argv]))

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert color("--style", "full") is True
    assert color("--style", "full", "--color", "never") is False
    assert color("--style", "basic", "--color", "always") is True
    assert color("--style", "none") is False


@pytest.mark.parametrize("command", ["run", "report", "list", "export", "compare"])
def test_cutaway_db_is_every_commands_default(
    monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    extra = ["1", "2"] if command == "compare" else []
    monkeypatch.setenv("CUTAWAY_DB", "/tmp/elsewhere.db")
    assert cli.parse_arguments([command, *extra]).db == "/tmp/elsewhere.db"
    assert cli.parse_arguments([command, *extra, "--db", "x.db"]).db == "x.db"
    monkeypatch.delenv("CUTAWAY_DB")
    assert cli.parse_arguments([command, *extra]).db == ".cutaway/cutaway.db"
    monkeypatch.setenv("CUTAWAY_DB", "")
    assert cli.parse_arguments([command, *extra]).db == ".cutaway/cutaway.db"


def test_stored_line() -> None:
    assert (
        cli.stored_line(3, ".cutaway/cutaway.db")
        == "cutaway: stored as #3 in .cutaway/cutaway.db: cutaway report 3"
    )
    assert (
        cli.stored_line(3, "/tmp/my runs.db")
        == "cutaway: stored as #3 in /tmp/my runs.db: cutaway report 3 --db '/tmp/my runs.db'"
    )


@pytest.mark.parametrize(
    ("argv", "target"),
    [(["report", "--all-pairs"], "analyze"), (["compare", "1", "2", "--all-pairs"], "compare")],
)
def test_all_pairs_reaches_the_analysis(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], target: str
) -> None:
    seen: dict[str, object] = {}

    class FakeStore:
        def __init__(self, db: str, create: bool = True) -> None:
            pass

        def resolve(self, reference: str | None) -> int:
            return 1

        def experiment_content(self, experiment_id: int, largest: int) -> None:
            return None  # as for an experiment not kept (cutaway.kept_analysis): analysed

        def commits_by_others(self) -> int | None:
            return None  # as a store that keeps no such count

    def fake(*args: object, **kwargs: object) -> None:
        seen.update(kwargs)

    # The commands import these when they run, so the fakes go where they are imported from.
    monkeypatch.setattr("cutaway.store.Store", FakeStore)
    monkeypatch.setattr("cutaway.compare.analyze", fake)
    monkeypatch.setattr("cutaway.compare.compare_experiments", fake)
    monkeypatch.setattr("cutaway.cli.stored.emit", lambda *args, **kwargs: None)
    assert cli.main(argv) == 0
    assert seen["all_pairs"] is True
    seen.clear()
    assert cli.main([a for a in argv if a != "--all-pairs"]) == 0
    assert seen["all_pairs"] is False


def test_keep_leftovers_in_quick_mode_and_over_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert spec_of("-c", "true").keep_leftovers is False
    assert spec_of("-c", "true", "--keep-leftovers").keep_leftovers is True
    path = tmp_path / "e.toml"
    path.write_text('name = "x"\ncommand = "true"\n')
    assert spec_of(str(path)).keep_leftovers is False
    assert spec_of(str(path), "--keep-leftovers").keep_leftovers is True


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "-c", "true", "--rounds", "3", "--export-json", "x.json"],
        ["report", "2", "--format", "json", "--all-metrics"],
        ["compare", "1", "2", "--map", "a=b"],
        ["list", "--db", "x.db"],
        ["export", "--format", "runs-csv", "-o", "x.csv"],
        ["check", "-c", "true", "--fail-on", "wall=5%", "--max-rounds", "9"],
        ["bisect", "v1", "v2", "--db", "x.db"],
        ["history", "name"],
        ["publish", "site", "--db", "x.db"],
    ],
)
def test_a_parser_built_for_one_command_parses_it_as_the_whole_parser(argv: list[str]) -> None:
    """The parser is built with only the named command's options: that command's arguments,
    and its --help, are the same as the whole parser's."""
    whole, listing, alone = (
        cli.build_parser(),
        cli.build_parser(argv[0]),
        cli.build_parser(argv[0], alone=True),
    )
    command = argv[0]
    for parser in (listing, alone):
        assert parser.parse_known_args(argv) == whole.parse_known_args(argv)
        assert (
            parser_module._subparsers(parser)[command].format_help()
            == parser_module._subparsers(whole)[command].format_help()
        )
    assert listing.format_help() == whole.format_help()


@pytest.mark.parametrize("argv", [["--help", "run"], ["-h", "report", "1"]])
def test_help_before_a_command_lists_every_command(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """The parser of a command line that begins with its command lists no other command; one
    with --help before the command prints the whole list, as `cutaway --help` does."""
    with pytest.raises(SystemExit) as caught:
        cli.parse_arguments(argv)
    assert caught.value.code == 0
    assert capsys.readouterr().out == cli.build_parser().format_help()


def test_commands_without_a_seed_get_a_fresh_one_and_a_given_seed_is_kept() -> None:
    seeds = {spec_of("-c", "true", "-c", "false").seed for _ in range(5)}
    assert len(seeds) == 5
    assert spec_of("-c", "true", "-c", "false", "--seed", "0").seed == 0


@pytest.mark.parametrize("command", ["run", "report", "compare", "history", "check"])
@pytest.mark.parametrize("width", ["1001", "100000000000000000000000"])
def test_a_width_past_the_widest_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], command: str, width: str
) -> None:
    err = usage_error(capsys, command, "--width", width)
    assert "--width" in err and "at least 40 and at most 1000" in err


def test_the_widest_width_is_accepted() -> None:
    assert cli.parse_arguments(["report", "--width", "1000"]).width == 1000


@pytest.mark.parametrize("columns", ["100000000000000000000000", "1001", "²", "10"])
def test_columns_that_is_no_width_gives_the_width_off_a_terminal(
    monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    """COLUMNS past the widest, or digits int() cannot read, are not a width (no traceback)."""
    from cutaway.cli.shared import WIDTH_OFF_TERMINAL, report_width

    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert report_width() == WIDTH_OFF_TERMINAL


def test_building_run_s_parser_reads_the_terminal_width_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """argparse checks every argument's metavar with a new help formatter, which reads the
    terminal's width each time: ninety reads for `run`'s options. The parser's check takes a
    formatter of any width; only its help reads the terminal's."""
    import shutil

    reads: list[object] = []
    get_terminal_size = shutil.get_terminal_size

    def counted(*arguments: object, **options: object) -> os.terminal_size:
        reads.append(arguments)
        return get_terminal_size()

    monkeypatch.setattr(shutil, "get_terminal_size", counted)
    parser = parser_module.build_parser("run")
    assert len(reads) <= 1
    assert "run" in parser.format_help()  # the help still reads it
    assert len(reads) >= 2


def test_a_metavar_that_does_not_fit_its_nargs_is_still_refused() -> None:
    """The metavar check still runs as each argument is added."""
    parser = parser_module.build_parser("report")
    with pytest.raises(ValueError, match="metavar"):
        parser.add_argument("--pair", nargs=2, metavar=("ONE", "TWO", "THREE"))
