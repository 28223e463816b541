"""A hyperfine user's command line in `cutaway run`.

hyperfine's options whose meaning is cutaway's are aliases on the run parser itself (``-r``,
``--runs``, ``-m``, ``-w``, ``-s``, ``-p``, ``-C``, ``--command-name``, ``-N``, ``-S``,
``-P``, ``-L``, ``-D``, ``-i``, ``--export-*``...). This module holds the rest: the options
whose meaning differs, answered with what cutaway does instead (never silently ignored), the
``-i=MODE`` form of hyperfine 1.16 on, and commands given as positional arguments."""

from __future__ import annotations

import os
from collections.abc import Sequence

# hyperfine's options that cutaway does not take, and what to do instead.
DIFFERENT: dict[str, str] = {
    "-M": "cutaway runs exactly --rounds rounds; --until WIDTH adds rounds until every interval "
    "is that narrow, within --max-time",
    "--max-runs": "cutaway runs exactly --rounds rounds; --until WIDTH adds rounds until every "
    "interval is that narrow, within --max-time",
    "-u": "cutaway picks each table column's unit from its values (one unit per column); the "
    "JSON export is always in seconds",
    "--time-unit": "cutaway picks each table column's unit from its values (one unit per "
    "column); the JSON export is always in seconds",
    "--sort": "cutaway ranks variants by wall time after the verdicts, and lists them in the "
    "order given everywhere else (the first is the baseline)",
    "--reference": "give the reference command first (it is the baseline), or name it with "
    "--baseline",
    "--min-benchmarking-time": "cutaway runs exactly --rounds rounds, or adds rounds with "
    "--until WIDTH within --max-time",
}
# What -c means to a hyperfine user, said when a positional command meets -c.
CLEANUP_NOTE = (
    "-c is cutaway's command option (hyperfine's -c, --cleanup, is --cleanup here): give the "
    "commands either as arguments or each with -c"
)
# hyperfine's --ignore-failure modes (1.16 on) that mean cutaway's ignore_failure: a run that
# exits non-zero counts; a crash or a timeout never does.
IGNORE_FAILURE_MODES = ("non-zero", "all-non-zero")


def different_option(word: str) -> str | None:
    """The message for a hyperfine option cutaway does not take, None for any other word."""
    option = word.split("=", 1)[0]
    note = DIFFERENT.get(option)
    return None if note is None else f"{option} is hyperfine's: {note}"


def normalize_ignore_failure(argv: Sequence[str]) -> list[str]:
    """``-i=non-zero`` and ``--ignore-failure=MODE`` as ``--ignore-failure`` (argparse would read
    ``-i=non-zero`` as ``-i -n on-zero``); another mode is refused by its name."""
    result: list[str] = []
    for index, token in enumerate(argv):
        if token == "--":
            return result + list(argv[index:])
        head, equals, mode = token.partition("=")
        if equals and head in ("-i", "--ignore-failure"):
            if mode not in IGNORE_FAILURE_MODES:
                raise ValueError(
                    f"{head}={mode}: cutaway counts a run that exits non-zero with "
                    f"{head} (or {head}=non-zero); a crash or a timeout never counts"
                )
            token = "--ignore-failure"
        result.append(token)
    return result


def is_experiment_file(argument: str) -> bool:
    """Whether a run argument names an experiment file rather than a command: a name ending in
    .toml, or an existing file that is not a program."""
    if argument.endswith(".toml"):
        return True
    return os.path.isfile(argument) and not os.access(argument, os.X_OK)
