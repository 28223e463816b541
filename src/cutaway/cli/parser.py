"""The `cutaway` command's argument parser: every command's options (`run`'s in
cli/run_options.py), hyperfine's habits (commands as arguments, `--shell bash`, `-i=non-zero`)
and, for a mistake, the closest known option and one short usage line."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from cutaway import __version__
from cutaway.cli.hyperfine_options import (
    CLEANUP_NOTE,
    DIFFERENT,
    different_option,
    is_experiment_file,
    normalize_ignore_failure,
)
from cutaway.cli.listing import DB_VARIABLE, DEFAULT_DB
from cutaway.cli.options import FLAME_GRAPHS, REPORT_FORMATS, add_db_option, add_output_options
from cutaway.cli.run_spec import command_hint
from cutaway.cli.shared import EXIT_USAGE
from cutaway.visible import display, visible

# Words taken as the value of a bare --shell: `--shell bash` is --shell=bash, while in
# `--shell experiment.toml` the file stays the positional argument (--shell alone is sh).
SHELL_WORDS = frozenset(
    ("sh", "bash", "dash", "zsh", "ksh", "mksh", "yash", "fish", "busybox", "pwsh", "none")
)


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors said first and one short usage line after (its own print the
    whole usage, 30 lines for `run`, before the line that matters)."""

    # argparse checks each argument's metavar as it is added by formatting it with a new help
    # formatter, which reads the terminal's width (an ioctl, and an exception off a terminal):
    # some ninety times as `run`'s parser is built. The check needs no width.
    _adding_argument = False

    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action:
        self._adding_argument = True
        try:
            return super().add_argument(*name_or_flags, **kwargs)
        finally:
            self._adding_argument = False

    def _get_formatter(self) -> argparse.HelpFormatter:
        if self._adding_argument and self.formatter_class is argparse.HelpFormatter:
            return argparse.HelpFormatter(prog=self.prog, width=_METAVAR_CHECK_WIDTH)
        return super()._get_formatter()

    def error(self, message: str) -> NoReturn:
        self.exit(
            EXIT_USAGE,
            f"{self.prog}: error: {_with_choice_hint(message)}\n"
            f"usage: {self.prog} ... (`{self.prog} --help` lists every option)\n",
        )


# Any width: the metavar check formats no line (see _Parser).
_METAVAR_CHECK_WIDTH = 80

# argparse's words for a value outside an argument's choices (Python 3.11 to 3.13), which it
# gives without the closest one that a mistyped option gets (see parse_arguments).
_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


def _with_choice_hint(message: str) -> str:
    """argparse's message, with the closest choice to a mistyped one: `cutaway reprot` (did
    you mean report?)."""
    found = _INVALID_CHOICE.search(message)
    if found is None:
        return message
    choices = re.findall(r"'([^']*)'", found.group(2))
    import difflib  # for a mistyped command only

    close = difflib.get_close_matches(found.group(1), choices, n=1, cutoff=0.6)
    return f"{message} (did you mean {close[0]}?)" if close else message


def _subparser(
    commands: argparse._SubParsersAction[_Parser], name: str, help_text: str
) -> argparse.ArgumentParser:
    return commands.add_parser(name, help=help_text, description=help_text, allow_abbrev=False)


# Every command with its one-line help, in `cutaway --help`'s order.
COMMAND_HELP = {
    "run": "run an experiment file, or quick mode with -c",
    "report": "report a stored experiment",
    "compare": "compare two stored experiments",
    "list": "list stored experiments",
    "export": "write a stored experiment in another format",
    "check": "the CI gate: fail when a candidate is slower",
    "bisect": "find the commit that made a workload slower",
    "history": "results by version, with the steps between them",
    "publish": "every history as offline HTML pages",
}


def build_parser(command: str | None = None, *, alone: bool = False) -> argparse.ArgumentParser:
    """Abbreviations are off everywhere (``--rou`` is not ``--rounds``): an unknown option gets
    a suggestion instead (see :func:`main`).

    With ``command``, only that command takes its options; the others are listed (for
    `cutaway --help` and a mistyped name) without them. A command line names one command, and
    the others' options are most of the parser's cost (their modules, some hundred actions).
    With ``alone`` too, the others are not even listed (a parser each: a millisecond in all),
    for an argument list that begins with the command: nothing before it can ask for the list,
    and the command itself is no mistake."""
    parser = _Parser(
        prog="cutaway",
        description=("Measure variants of a command in interleaved rounds and say what changed."),
        epilog=f"The store is ${DB_VARIABLE}, else {DEFAULT_DB} (every command's --db).",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"cutaway {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    subparsers = {
        name: _subparser(commands, name, help_text)
        for name, help_text in COMMAND_HELP.items()
        if not alone or name == command or (command == "check" and name == "run")
    }
    for name, add_arguments in _ARGUMENTS.items():
        if command is None or command == name or (command == "check" and name == "run"):
            add_arguments(subparsers)  # check takes run's options: run's are added first
    return parser


Subparsers = dict[str, argparse.ArgumentParser]


def _run_arguments(subparsers: Subparsers) -> None:
    from cutaway.cli.run_options import add_run_arguments

    add_run_arguments(subparsers["run"])


def _report_arguments(subparsers: Subparsers) -> None:
    report = subparsers["report"]
    report.add_argument("experiment", nargs="?", help="id, name or 'latest' (default)")
    report.add_argument("--format", choices=REPORT_FORMATS, default="terminal")
    _add_reading_options(report)
    add_output_options(report)


def _add_reading_options(parser: argparse.ArgumentParser) -> None:
    """``--estimator`` and ``--confidence``: the stored rounds read another way, nothing re-run."""
    from cutaway.model import ESTIMATORS  # only the commands that take it pay for the model

    parser.add_argument(
        "--estimator",
        choices=ESTIMATORS,
        help="read the paired rounds with this estimator instead of the experiment's: trimmed, "
        "a 20%% trimmed mean that runs slowed now and then by something else do not move",
    )
    parser.add_argument(
        "--confidence",
        metavar="LEVEL",
        type=confidence_level,
        help="read the paired rounds at this confidence level instead of the experiment's, "
        "e.g. 99%% or 0.99",
    )


def confidence_level(text: str) -> float:
    """The argparse type of ``report/export --confidence``: what an experiment file's
    ``confidence`` takes."""
    from cutaway.spec.errors import SpecError
    from cutaway.spec.fields import read_confidence

    try:
        return read_confidence(text, ("--confidence",))
    except SpecError as error:
        raise argparse.ArgumentTypeError(error.message) from None


def _compare_arguments(subparsers: Subparsers) -> None:
    compare = subparsers["compare"]
    compare.add_argument("first", help="the reference experiment (id or name)")
    compare.add_argument("second", help="the experiment compared with it")
    compare.add_argument("--format", choices=REPORT_FORMATS, default="terminal")
    compare.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="compare variant OLD of FIRST with variant NEW of SECOND (repeat for each pair; "
        "variants of the same name are paired without it)",
    )
    add_output_options(compare)


def _list_arguments(subparsers: Subparsers) -> None:
    add_db_option(subparsers["list"])


def _export_arguments(subparsers: Subparsers) -> None:
    export = subparsers["export"]
    export.add_argument("experiment", nargs="?", help="id, name or 'latest' (default)")
    export.add_argument(
        "--format",
        choices=sorted(
            [*REPORT_FORMATS, "runs-csv", "series-csv", "folded", "speedscope", *FLAME_GRAPHS]
        ),
        default="json",
    )
    export.add_argument(
        "--variant",
        help="the variant of a flame graph (default: the baseline), or the one a differential "
        "flame graph compares with the baseline",
    )
    export.add_argument("-o", "--output", help="file to write (default: standard output)")
    _add_reading_options(export)
    add_db_option(export)


def _check_arguments(subparsers: Subparsers) -> None:
    from cutaway.cli.check import add_check_arguments

    add_check_arguments(subparsers["check"], subparsers["run"])


def _bisect_arguments(subparsers: Subparsers) -> None:
    from cutaway.cli.bisect import add_bisect_arguments

    add_bisect_arguments(subparsers["bisect"])
    add_db_option(subparsers["bisect"])


def _history_arguments(subparsers: Subparsers) -> None:
    from cutaway.cli.history import add_history_arguments

    add_history_arguments(subparsers["history"])
    add_db_option(subparsers["history"])


def _publish_arguments(subparsers: Subparsers) -> None:
    from cutaway.cli.history import add_publish_arguments

    add_publish_arguments(subparsers["publish"])
    add_db_option(subparsers["publish"])


_ARGUMENTS = {
    "run": _run_arguments,
    "report": _report_arguments,
    "compare": _compare_arguments,
    "list": _list_arguments,
    "export": _export_arguments,
    "check": _check_arguments,
    "bisect": _bisect_arguments,
    "history": _history_arguments,
    "publish": _publish_arguments,
}


def normalize_shell(argv: Sequence[str]) -> list[str]:
    """hyperfine's ``--shell bash`` alongside cutaway's ``--shell`` alone (/bin/sh): a bare
    --shell takes the next word only when it names a shell (SHELL_WORDS, or an absolute path to
    an executable), and argparse always sees ``--shell=VALUE``. So ``--shell experiment.toml``
    stays unambiguous: the file is the positional argument, the shell is sh."""
    result: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            result += argv[index:]
            break
        if token == "--shell":
            following = argv[index + 1] if index + 1 < len(argv) else None
            if following is not None and _is_shell_word(following):
                result.append(f"--shell={following}")
                index += 2
                continue
            result.append("--shell=sh")
        else:
            result.append(token)
        index += 1
    return result


def _is_shell_word(word: str) -> bool:
    if word in SHELL_WORDS:
        return True
    return os.path.isabs(word) and os.path.isfile(word) and os.access(word, os.X_OK)


def _not_utf8(arguments: Sequence[str]) -> str | None:
    """Why an argument cannot be taken, when one holds bytes that are not UTF-8 (Python keeps
    them as lone surrogates): names, commands, labels and paths are stored as text, where such
    bytes cannot go, so the store refused them once the experiment had begun (a traceback)."""
    for position, argument in enumerate(arguments, start=1):
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError as error:
            byte = argument[error.start].encode("utf-8", errors="surrogateescape")
            return visible(
                f"argument {position} is not UTF-8 text (byte {byte!r} in {display(argument)!r}): "
                "cutaway keeps names, commands and paths as text"
            )
    return None


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse, and answer an unknown option with the closest known one (``--rnuds``: did you
    mean --rounds?). Exits 2 on bad usage, as argparse does."""
    every_argument = list(sys.argv[1:] if argv is None else argv)
    command = _command_named(every_argument)
    parser = build_parser(command, alone=command is not None and every_argument[0] == command)
    problem = _not_utf8(every_argument)
    if problem is not None:
        parser.error(problem)
    arguments, workload = split_workload(every_argument)
    try:
        arguments = normalize_ignore_failure(arguments)
    except ValueError as error:
        parser.error(visible(str(error)))
    args, extras = parser.parse_known_args(normalize_shell(arguments))
    if workload is not None:
        args.workload = [*args.workload, *workload]
    subparser = _subparsers(parser)[args.command]
    different = [message for extra in extras if (message := different_option(extra))]
    if different:  # first: its value may have been taken for a positional argument
        subparser.error(visible("; ".join(different)))
    if args.command == "run":
        extras = _positional_commands(args, extras, subparser)
    if not extras:
        return args
    file = args.file if args.command in ("run", "check") else None
    if file and not os.path.exists(file) and not any(e.startswith("-") for e in extras):
        subparser.error(visible(command_hint([file, *extras])))  # cutaway run sleep 0.01
    known = [o for p in (subparser, parser) for a in p._actions for o in a.option_strings]
    if args.command == "run":  # a mistyped --time-unit is nearer to it than to --timeout
        known += [option for option in DIFFERENT if option.startswith("--")]
    problems = []
    for extra in extras:
        message = f"unrecognized argument {extra}"
        if extra.startswith("-") and len(extra) > 1:
            option = extra.split("=", 1)[0]
            import difflib  # for a mistyped option only

            close = difflib.get_close_matches(option, known, n=1, cutoff=0.6)
            if close:
                message += f" (did you mean {close[0]}?)"
        problems.append(message)
    subparser.error(visible("; ".join(problems)))


def _command_named(arguments: Sequence[str]) -> str | None:
    """The command an argument list names (the first word that is not an option: the parser
    itself takes only --help and --version before it), None for none known."""
    first = next((argument for argument in arguments if not argument.startswith("-")), None)
    return first if first in COMMAND_HELP else None


def _positional_commands(
    args: argparse.Namespace, extras: list[str], subparser: argparse.ArgumentParser
) -> list[str]:
    """`cutaway run 'sleep 0.01' 'sleep 0.02'`, as hyperfine takes commands: positional
    arguments that are not an experiment file are the commands, the first the baseline (with
    -c too, the user may mean hyperfine's -c, --cleanup: said, not guessed). The extras left."""
    if args.file is None or is_experiment_file(args.file) or any(e.startswith("-") for e in extras):
        return extras  # an unknown option's value may have been taken for the positional
    words = [e for e in extras if not e.startswith("-")]
    if args.cmd:
        subparser.error(visible(CLEANUP_NOTE))
    args.cmd, args.file = [args.file, *words], None
    return [e for e in extras if e.startswith("-")]


def split_workload(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """`cutaway bisect ... -- WORKLOAD`: the words after ``--`` are the workload, whatever
    they look like (argparse would give them to no positional after GOOD and BAD)."""
    arguments = list(argv)
    if arguments[:1] != ["bisect"] or "--" not in arguments:
        return arguments, None
    cut = arguments.index("--")
    return arguments[:cut], arguments[cut + 1 :]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}
