"""The `cutaway` command's commands, by name, and how each one ends (cutaway.cli.main answers
`--version`, `--help` and `list` before this module is imported). The parser is in
cli/parser.py (`run`'s options in cli/run_options.py), `run` in cli/run.py, the commands that
read stored experiments in cli/stored.py, `check`, `bisect` and `history` in their own modules.
They only translate arguments into a Spec or a stored-experiment reference and call the
library; everything they print comes from cutaway.report.

Exit status: 0 done; 1 the experiment failed (a command could not start or failed, a hook
failed, a store error; runs completed before are kept); 2 bad input (usage, experiment file, a
damaged store);
128 + the signal's number when stopped by one (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP; completed
runs are saved). A reader that closes standard output or error
changes none of these (cli/streams.py). docs/cli.md describes every option, the exit statuses
and the environment variables.

Everything printed here that holds a user's or a program's text (names, paths, a command's
stderr in an error) goes through cutaway.visible: control characters are shown escaped, never
sent to the terminal."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import TYPE_CHECKING

from cutaway import interrupts
from cutaway.cli.listing import DEFAULT_DB

# The parser and the shared names, importable from here as before the commands were split by
# subject (cli/parser.py, cli/run.py, cli/stored.py).
from cutaway.cli.options import REPORT_FORMATS
from cutaway.cli.parser import (
    build_parser,
    normalize_shell,
    parse_arguments,
    split_workload,
)
from cutaway.cli.run_spec import spec_from_args
from cutaway.cli.shared import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    STYLES,
    UsageError,
    color_wanted,
    stored_line,
)
from cutaway.cli.streams import pipe_safe_streams
from cutaway.visible import visible

if TYPE_CHECKING:
    from cutaway.probes.plugin import ProbePlugin

__all__ = [
    "COMMANDS",
    "DEFAULT_DB",
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_USAGE",
    "REPORT_FORMATS",
    "STYLES",
    "build_parser",
    "color_wanted",
    "main",
    "normalize_shell",
    "parse_arguments",
    "spec_from_args",
    "split_workload",
    "stored_line",
]


def use_registered_probes() -> None:
    """Hand cutaway's core the probes of cutaway.probes.registry, as importing cutaway.api does
    (a library the command line does not otherwise need: its import cost each command a
    millisecond). The registry is imported when the core first asks."""
    from cutaway.probes import core

    core.provide(_registered_plugins)


def _registered_plugins() -> tuple[ProbePlugin, ...]:
    from cutaway.probes.registry import plugins

    return plugins()


use_registered_probes()  # on import, as cutaway.api's: `main` is not the only way in


def _command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """The command ``name`` of ``module``, imported when it is run: a command line runs one
    command, and importing every command's module cost each one the others' imports."""

    def command(args: argparse.Namespace) -> int:
        found: Callable[[argparse.Namespace], int] = getattr(import_module(module), name)
        return found(args)

    return command


COMMANDS = {
    "run": _command("cutaway.cli.run", "cmd_run"),
    "report": _command("cutaway.cli.stored", "cmd_report"),
    "compare": _command("cutaway.cli.stored", "cmd_compare"),
    "list": _command("cutaway.cli.stored", "cmd_list"),
    "export": _command("cutaway.cli.stored", "cmd_export"),
    "check": _command("cutaway.cli.check", "cmd_check"),
    "bisect": _command("cutaway.cli.bisect", "cmd_bisect"),
    "history": _command("cutaway.cli.history", "cmd_history"),
    "publish": _command("cutaway.cli.history", "cmd_publish"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Its reader may close standard output or error at any time: the command
    carries on as if nobody watched (cli/streams.py). SIGTERM and SIGHUP stop it as Ctrl-C does,
    with exit status 128 + the signal's number (cutaway.interrupts)."""
    use_registered_probes()  # the runner's and the analysis' probes (cutaway.probes.core)
    with pipe_safe_streams():
        try:
            args = parse_arguments(argv)
        except KeyboardInterrupt as error:  # nothing started yet
            print("cutaway: interrupted", file=sys.stderr)
            return interrupts.exit_status(error)
        try:
            with interrupts.handling():
                try:
                    command_status = COMMANDS[args.command](args)
                    sys.stdout.flush()  # here, so that a failed write is a message and exit 1
                    return command_status
                except KeyboardInterrupt as error:
                    print("cutaway: interrupted", file=sys.stderr)
                    return interrupts.exit_status(error)
        except KeyboardInterrupt as error:  # landed between the two: said all the same
            print("cutaway: interrupted", file=sys.stderr)
            return interrupts.exit_status(error)
        except Exception as error:
            interruption = interrupts.wrapped_interrupt(error)
            if interruption is not None:  # it landed while a module was imported
                print("cutaway: interrupted", file=sys.stderr)
                return interrupts.exit_status(interruption)
            status = _exit_status(error)
            if status is None:  # a bug: its traceback, escaped, and Python's own status
                import traceback

                sys.stderr.write(visible(traceback.format_exc(), keep_newlines=True))
                return EXIT_ERROR
            # Lines stay lines (an error may quote a command's stderr); nothing else passes.
            print(f"cutaway: {visible(str(error), keep_newlines=True)}", file=sys.stderr)
            return status


def _exit_status(error: Exception) -> int | None:
    """EXIT_USAGE or EXIT_ERROR for an error cutaway reports in one line, None for any other
    (a bug: its traceback is shown). The error classes are imported here, once an error has
    happened, so that `--version` and `--help` import neither the store nor the spec parser."""
    from cutaway.history import HistoryError
    from cutaway.output_files import OutputPathError, OutputWriteError
    from cutaway.runner.errors import ProbeUnavailable, RunnerError, UnrunnableCommand
    from cutaway.runner.forkserver import ForkServerError
    from cutaway.settings_reading import StoredSettingError
    from cutaway.spec import SpecError
    from cutaway.store import (
        BadStorePath,
        BadStoreUrl,
        DamagedStoreError,
        StoredRecordError,
        StoreError,
    )
    from cutaway.versions import VersionError

    # A damaged store is bad input, as a bad experiment file is: nothing can be measured from it.
    if isinstance(
        error,
        (
            SpecError,
            UsageError,
            OutputPathError,
            ProbeUnavailable,
            UnrunnableCommand,
            DamagedStoreError,
            StoredRecordError,
            StoredSettingError,
            BadStorePath,
            BadStoreUrl,
            HistoryError,
            VersionError,
        ),
    ):
        return EXIT_USAGE
    if isinstance(error, (RunnerError, StoreError, ForkServerError, OutputWriteError)):
        return EXIT_ERROR
    return None


if __name__ == "__main__":
    sys.exit(main())
