"""`cutaway run`'s options: the commands and their names, rounds, hooks, parameters, the
commands' streams, limits, labels, probes and their quick modes (the load plugin's, against
servers), declared metrics. hyperfine's options are aliases where their meaning is the same
(cli/hyperfine_options.py says where it differs). docs/cli.md describes each one."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from cutaway.cli.numbers import integer
from cutaway.cli.options import add_output_options
from cutaway.cli.run_spec import HOOK_OPTIONS
from cutaway.probes.registry import plugins, quick_modes

HOOK_SHORT_OPTIONS = {"setup": ("-s",), "prepare": ("-p",), "conclude": ("-C",)}


class _AppendParameter(argparse.Action):
    """--parameter-scan and --parameter-list share one list, in command-line order (the
    first parameter varies slowest)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option_string: str | None = None,
    ) -> None:
        assert isinstance(values, list)
        items = list(getattr(namespace, self.dest) or [])
        items.append((self.const, *values))
        setattr(namespace, self.dest, items)


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    """Every option of `cutaway run` (`cutaway check` takes them too, cli/check.py)."""
    from cutaway.model import ESTIMATORS  # a run reads its spec into the model anyway

    run.add_argument(
        "file",
        nargs="?",
        metavar="FILE|COMMAND",
        help="an experiment file (TOML), or commands to measure as hyperfine takes them "
        "(cutaway run 'sleep 0.01' 'sleep 0.02': the first is the baseline)",
    )
    # -- the plugins' quick modes, each with its own options (the load plugin's --url)
    for mode in quick_modes():
        mode.add_arguments(run)
    run.add_argument(
        "-c",
        "--cmd",
        action="append",
        default=[],
        metavar="CMD",
        help="quick mode: a command to measure (repeat; the first is the baseline)",
    )
    run.add_argument(
        "-n",
        "--name",
        "--command-name",
        action="append",
        default=[],
        help="name of each command (hyperfine's --command-name)",
    )
    run.add_argument("--baseline", help="the variant the others are compared with")
    run.add_argument(
        "--rounds",
        type=integer,
        help="counted rounds, each command once per round (default 10; hyperfine's -r/--runs, "
        "and its -m/--min-runs: with --until, rounds are added after these)",
    )
    # hyperfine's names for --rounds and --warmup, apart so that a message names one option.
    run.add_argument(
        "-r", "--runs", "-m", "--min-runs", dest="rounds", type=integer, help=argparse.SUPPRESS
    )
    run.add_argument(
        "--warmup", type=integer, help="warmup rounds, run and not counted (default 1; -w)"
    )
    run.add_argument("-w", dest="warmup", type=integer, help=argparse.SUPPRESS)
    run.add_argument(
        "--shell",
        "-S",
        metavar="SHELL",
        help="quick mode: run commands through a shell. --shell alone is /bin/sh -c; "
        "--shell=bash (or --shell bash) runs bash -c CMD; --shell=none runs them directly "
        "(the default)",
    )
    run.add_argument(
        "-N",
        dest="shell",
        action="store_const",
        const="none",
        help="quick mode: no shell (--shell=none, as hyperfine's -N)",
    )
    for hook, option in HOOK_OPTIONS.items():
        run.add_argument(
            option,
            *HOOK_SHORT_OPTIONS.get(hook, ()),
            dest=hook,
            action="append",
            default=[],
            metavar="CMD",
            help=f"quick mode: the {hook} hook (shell code); once for every -c, or once per -c",
        )
    run.add_argument(
        "--parameter-scan",
        "-P",
        dest="parameters",
        action=_AppendParameter,
        const="scan",
        nargs=3,
        metavar=("NAME", "MIN", "MAX"),
        help="quick mode: one variant per value MIN, MIN+1... MAX, {NAME} substituted",
    )
    run.add_argument(
        "--parameter-step-size",
        "-D",
        dest="step_size",
        metavar="DELTA",
        help="the step of --parameter-scan (default 1; decimals are fine)",
    )
    run.add_argument(
        "--parameter-list",
        "-L",
        dest="parameters",
        action=_AppendParameter,
        const="list",
        nargs=2,
        metavar=("NAME", "VALUES"),
        help="quick mode: one variant per comma-separated value, {NAME} substituted; "
        "several parameters make every combination",
    )
    run.add_argument(
        "--input",
        metavar="FILE",
        help="feed FILE to every command's standard input (default: /dev/null)",
    )
    run.add_argument(
        "--output",
        metavar="WHERE",
        help="where commands' standard output goes: null (default), pipe, inherit, or a FILE",
    )
    run.add_argument(
        "--show-output",
        action="store_true",
        help="show the commands' standard output (--output=inherit)",
    )
    run.add_argument(
        "--ignore-failure",
        "-i",
        action="store_true",
        help="count runs that exit non-zero as successful (crashes and timeouts never are)",
    )
    run.add_argument(
        "--keep-leftovers",
        action="store_true",
        help="leave running what a command leaves behind (`server &`); by default it is "
        "stopped when the run ends",
    )
    run.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="print nothing on stderr but errors: no progress, notices or stored-as line",
    )
    run.add_argument(
        "--max-variants",
        type=integer,
        metavar="N",
        help="refuse a matrix or parameter sweep of more than N variants, counted before any "
        "is made (default 10000, or the file's max_variants)",
    )
    run.add_argument("--timeout", help="per-run timeout, e.g. 10s")
    run.add_argument("--hook-timeout", help="time limit of each hook (default 10m), e.g. 30s")
    run.add_argument("--margin", help="equivalence margin, e.g. 1%% (default 0.5%%)")
    run.add_argument(
        "--primary-metric",
        metavar="NAME",
        help="the metric judged at full alpha and steering --until, e.g. cpu (default wall; "
        "the others are Holm-adjusted)",
    )
    run.add_argument(
        "--estimator",
        choices=ESTIMATORS,
        help="how paired rounds estimate a change: mean (default), or trimmed, a 20%% trimmed "
        "mean that a few rounds slowed by something else do not move",
    )
    run.add_argument(
        "--confidence",
        metavar="LEVEL",
        help="confidence level of every interval and verdict, e.g. 99%% or 0.99 (default 95%%: "
        "one identical pair in twenty reads as a change)",
    )
    run.add_argument("--until", help="adaptive: add rounds until every interval is this narrow")
    run.add_argument("--max-time", help="time budget for the whole experiment, e.g. 60s")
    run.add_argument("--seed", type=integer, help="seed for round orders and the bootstrap")
    run.add_argument("--label", help="a label stored with the experiment, e.g. a version")
    run.add_argument(
        "--version-from",
        metavar="DIR",
        help="store `git describe --tags --always --dirty` of this checkout as the label "
        "(`cutaway history` lines results up by it)",
    )
    run.add_argument(
        "--variant-version",
        action="append",
        default=[],
        metavar="VERSION",
        help="quick mode: a variant's own version (else the label's); once for every -c, or "
        "once per -c (an experiment file says version, version_from or version_command)",
    )
    run.add_argument(
        "--resume",
        nargs="?",
        const="latest-incomplete",
        metavar="EXPERIMENT",
        help="continue an interrupted experiment (default: the newest one)",
    )
    # -- the probes' flags, each probe's own (its plugin's add_arguments; docs/cli.md)
    for plugin in plugins():
        plugin.add_arguments(run)
    # -- declared metrics (cutaway.spec.metrics; docs/experiment-file.md, [[metrics]])
    run.add_argument(
        "--metric",
        action="append",
        default=[],
        metavar="SPEC",
        help="also measure a metric (repeat): NAME[:BETTER[:UNIT]]=SOURCE:WHAT, e.g. "
        "rps:higher=output:ab:requests_per_second or files=command:'ls | wc -l' "
        "(docs/experiment-file.md lists every source)",
    )
    run.add_argument(
        "--metric-regex",
        action="append",
        default=[],
        metavar="NAME=REGEX",
        help="also measure a number in the command's output: NAME[:BETTER[:UNIT]]=REGEX, "
        "the REGEX with a group (?P<value>...)",
    )
    run.add_argument(
        "--no-probes",
        action="store_true",
        help="ignore the file's [probes]: whole-process metrics without any probe's cost",
    )
    add_output_options(run)
