"""The `cutaway` command's entry point: answers `--version`, `--help` and `list` at once, and
hands everything else to the argument parser and the commands (cutaway.cli.commands).

A command run in loops and CI jobs should start as fast as the interpreter (within 1.5x of
`python -c pass`). argparse, re, typing, pathlib and dataclasses each cost a good part
of that, so this module imports none of them: it recognises the few argument lists it can answer
exactly as the parser would, and gives every other one to the parser. Tests hold the answers
equal to the parser's (tests/unit/test_cli_fast_paths.py) and check what is imported
(tests/unit/test_startup_imports.py).
"""

from __future__ import annotations

import os
import sys

from cutaway import __version__
from cutaway.cli.listing import default_db, print_listing

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which costs start-up time
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn


EXIT_INTERRUPTED = 130  # 128 + SIGINT: SIGTERM and SIGHUP kill by default until handled

# `cutaway --help` as the parser prints it when the terminal has at least HELP_MIN_COLUMNS
# columns (argparse wraps it on narrower ones). Spelled out so that --help needs no parser;
# tests/unit/test_cli_fast_paths.py fails when it differs from build_parser().format_help().
HELP_MIN_COLUMNS = 76
HELP = """\
usage: cutaway [-h] [--version] COMMAND ...

Measure variants of a command in interleaved rounds and say what changed.

positional arguments:
  COMMAND
    run       run an experiment file, or quick mode with -c
    report    report a stored experiment
    compare   compare two stored experiments
    list      list stored experiments
    export    write a stored experiment in another format
    check     the CI gate: fail when a candidate is slower
    bisect    find the commit that made a workload slower
    history   results by version, with the steps between them
    publish   every history as offline HTML pages

options:
  -h, --help  show this help message and exit
  --version   show program's version number and exit

The store is $CUTAWAY_DB, else .cutaway/cutaway.db (every command's --db).
"""


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        status = _answer_at_once(arguments)
    except BrokenPipeError:  # `cutaway list | head -1`: the reader has all it wanted
        _drop_standard_output()
        return 0
    except OSError as error:  # standard output on a full disk, or on /dev/full
        _drop_standard_output()
        print(f"cutaway: cannot write standard output: {error.strerror or error}", file=sys.stderr)
        return 1
    if status is not None:
        return status
    if argv is None:  # the process's own command (not main(argv) called by a program)
        _hold_stop_signals()
        _collect_garbage_less_often()
    try:
        from cutaway.cli.commands import main as parse_and_run

        return parse_and_run(arguments)
    except KeyboardInterrupt:  # Ctrl-C while the commands are imported, or once they are done
        sys.stderr.write("cutaway: interrupted\n")
        return EXIT_INTERRUPTED
    except RuntimeError as error:
        # Ctrl-C in a dataclass field's __set_name__ while a module is imported: Python 3.11
        # raises it wrapped (cutaway.interrupts.wrapped_interrupt, not imported up here).
        if not isinstance(error.__cause__, KeyboardInterrupt):
            raise
        sys.stderr.write("cutaway: interrupted\n")
        return EXIT_INTERRUPTED


def run() -> NoReturn:
    """The `cutaway` program (its script and `python -m cutaway`): :func:`main`, then the
    process ends at once (:func:`_exit_at_once`)."""
    _exit_at_once(main())


def _exit_at_once(status: int) -> NoReturn:
    """Exit with ``status`` without the interpreter's finalization, which frees every module
    and object one by one: 30 to 50 ms after a command that imported numpy and the reports,
    in a process about to end. Only when nothing needs it: no store is open (closing one
    checkpoints its WAL into the file), no thread but daemons runs; then the atexit functions
    run and the standard streams are flushed, as at an ordinary exit. A flush that fails, or
    anything left open, takes the ordinary exit, which reports it as Python does."""
    import atexit

    if _left_open():
        sys.exit(status)
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        sys.exit(status)
    os._exit(status)


def _left_open() -> bool:
    """Whether a store is still open, a thread other than a daemon still runs, or a profiler
    or tracer watches (``python -m cProfile``, coverage: they write what they saw as the
    interpreter ends): what the interpreter's finalization would close, wait for or let
    finish."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return True
    store = sys.modules.get("cutaway.store.db")
    if store is not None and store.open_stores():
        return True
    threading = sys.modules.get("threading")
    if threading is None:
        return False
    main_thread = threading.main_thread()
    return any(
        thread is not main_thread and thread.is_alive() and not thread.daemon
        for thread in threading.enumerate()
    )


def _collect_garbage_less_often() -> None:
    """Python's cyclic garbage collector, at its default thresholds, ran about 70 times while a
    command imported its modules (15 to 20 ms of a `run` session), finding next to nothing:
    modules, classes and functions live until the process ends. The youngest objects collected
    every 50,000 new ones instead of 700 (the middle generation every 20 of those, not 10)
    skips them, and still bounds what cycles of garbage may pile up in a long experiment."""
    import gc

    gc.set_threshold(50_000, 20, 10)


def _hold_stop_signals() -> None:
    """Have the kernel hold SIGINT, SIGTERM and SIGHUP (block them) while the commands are
    imported and parsed, a few hundred milliseconds in which no handler of cutaway's is in
    place: a signal that comes then waits, instead of killing the process by its default
    action, and is delivered once cutaway.interrupts.handling() has installed its handlers
    (which release the signals, and hold them again once the command is over, so that a signal
    that comes while the process exits cannot change the status it exits with). Nothing is
    started before the release: a child would inherit the blocked signals. Only for the
    process's own command: a program that calls main(argv) keeps its signals as they were.
    `_signal` is the C module under `signal`, which imports enum (start-up time)."""
    import _signal  # type: ignore[import-not-found]

    _signal.pthread_sigmask(_signal.SIG_BLOCK, (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP))


def _answer_at_once(arguments: list[str]) -> int | None:
    """The exit status of an argument list answered without the parser; None for the others."""
    if arguments == ["--version"]:
        print(f"cutaway {__version__}")
        return 0
    if arguments in (["--help"], ["-h"]) and _help_is_static():
        sys.stdout.write(HELP)
        return 0
    db = _list_db(arguments)
    if db is not None:
        from cutaway.store.listing import read_listing

        rows = read_listing(db)
        if rows is not None:
            print_listing(rows, db)
            sys.stdout.flush()  # a closed pipe is found here, not at exit
            return 0
    return None


def _drop_standard_output() -> None:
    """Point standard output at /dev/null, so that what is still buffered is flushed at exit
    without an error (as cli/streams.py does for every other command)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _help_is_static() -> bool:
    """Whether argparse would print HELP: on a wide enough terminal, and before Python 3.14,
    whose argparse colours help on a terminal."""
    return sys.version_info < (3, 14) and _terminal_columns() >= HELP_MIN_COLUMNS


def _terminal_columns() -> int:
    """The width argparse formats help for: shutil.get_terminal_size().columns (which imports
    fnmatch and re), computed the same way."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    try:
        return os.get_terminal_size(stdout.fileno()).columns or 80 if stdout else 80
    except (AttributeError, ValueError, OSError):
        return 80


def _list_db(arguments: list[str]) -> str | None:
    """The store of `list`, `list --db PATH` or `list --db=PATH`; None for any other argument
    list (including `list --help` and mistakes, which the parser answers)."""
    if arguments == ["list"]:
        return default_db()
    if len(arguments) == 2 and arguments[0] == "list" and arguments[1].startswith("--db="):
        return arguments[1].removeprefix("--db=")
    if arguments[:2] == ["list", "--db"] and len(arguments) == 3:
        value = arguments[2]
        return None if value.startswith("-") else value  # argparse: a missing value
    return None
