"""`cutaway run`'s (and `check`'s) arguments -> a Spec: an experiment file with the options that
override it, quick mode's commands with their hooks and parameters, or a plugin's quick mode
(the load plugin's --url servers). Only translation: what is wrong with the input is a
UsageError or the spec's own SpecError."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cutaway.cli.shared import UsageError
from cutaway.visible import display

if TYPE_CHECKING:
    from cutaway.model import Spec
    from cutaway.probes.plugin import QuickMode
    from cutaway.spec.quick import Parameter


# The quick-mode hooks and their options (cutaway.spec.quick reads them); spelled here so that
# building the parser (for --help) imports no spec code.
HOOK_OPTIONS = {hook: f"--{hook}" for hook in ("setup", "prepare", "conclude", "cleanup")}


# Quick-mode options: with an experiment file they are an error, not silently ignored.
QUICK_ONLY = {
    "name": "-n/--name",
    "shell": "--shell/-N",
    "setup": "--setup",
    "prepare": "--prepare",
    "conclude": "--conclude",
    "cleanup": "--cleanup",
    "parameters": "--parameter-scan/--parameter-list",
    "step_size": "--parameter-step-size",
    "variant_version": "--variant-version",
}


def spec_from_args(args: argparse.Namespace) -> Spec:
    """The experiment file or the -c commands, with command-line overrides applied."""
    from cutaway.spec import SpecError, apply_overrides, quick_spec
    from cutaway.spec.fields import fresh_seed

    if args.file and args.cmd:
        raise UsageError("give an experiment file or -c commands, not both")
    quick = quick_mode(args)
    if quick is not None and (args.file or args.cmd):
        raise UsageError(f"give {quick.what}, an experiment file or -c commands, not two")
    for mode in _quick_modes():
        given = mode.given(args)
        if given and mode is not quick:
            raise UsageError(
                f"{', '.join(given)} only apply to {mode.what}; an experiment file says the "
                f"same in {mode.in_file} (docs/experiment-file.md)"
            )
    if not args.file and not args.cmd and quick is None:
        raise UsageError("nothing to run: give an experiment file or -c 'COMMAND' (twice or more)")
    if args.file and not os.path.exists(args.file) and looks_like_command(args.file):
        raise UsageError(command_hint([args.file]))
    if args.show_output and args.output is not None:
        raise UsageError("give --show-output or --output, not both (--show-output is inherit)")
    if args.step_size is not None and not any(p[0] == "scan" for p in args.parameters or ()):
        raise SpecError("--parameter-step-size needs --parameter-scan", key="--parameter-step-size")
    if args.file:
        given = [option for dest, option in QUICK_ONLY.items() if getattr(args, dest)]
        if given:
            raise UsageError(
                f"{', '.join(given)} only apply to -c commands; an experiment file says the "
                "same with its own keys (docs/experiment-file.md)"
            )
        from cutaway.spec import load_spec  # the file's reader: for a file only

        spec = load_spec(args.file, max_variants=args.max_variants)
    elif quick is not None:
        spec = quick.spec(args, quick_hooks(args))
    else:
        spec = quick_spec(
            args.cmd,
            args.name,
            shell=args.shell or False,
            hooks=quick_hooks(args),
            parameters=_parameters(args),
            max_variants=args.max_variants,
            versions=args.variant_version,
        )
    return apply_overrides(
        spec,
        {
            "--rounds": args.rounds,
            "--warmup": args.warmup,
            "--timeout": args.timeout,
            "--hook-timeout": args.hook_timeout,
            "--margin": args.margin,
            "--primary-metric": getattr(args, "primary_metric", None),
            "--estimator": getattr(args, "estimator", None),
            "--confidence": getattr(args, "confidence", None),
            "--until": args.until,
            "--max-time": args.max_time,
            # An experiment file without a seed got a fresh one when it was read.
            "--seed": args.seed if args.seed is not None or args.file else fresh_seed(),
            "--baseline": args.baseline,
            "--no-probes": args.no_probes or None,
            **_probe_options(args),
            "--metric": args.metric or None,
            "--metric-regex": args.metric_regex or None,
            "--ignore-failure": args.ignore_failure or None,
            "--keep-leftovers": args.keep_leftovers or None,
            "--input": args.input,
            "--output": "inherit" if args.show_output else args.output,
        },
    )


def _quick_modes() -> tuple[QuickMode, ...]:
    from cutaway.probes.registry import quick_modes

    return quick_modes()


def quick_mode(args: argparse.Namespace) -> QuickMode | None:
    """The plugin's quick mode the command line asks for (``--url``), None for none."""
    return next((mode for mode in _quick_modes() if getattr(args, mode.dest, None)), None)


def quick_hooks(args: argparse.Namespace) -> dict[str, list[str]]:
    """Quick mode's hooks (``--setup`` ...), as given."""
    return {hook: getattr(args, hook) for hook in HOOK_OPTIONS}


def _probe_options(args: argparse.Namespace) -> dict[str, object]:
    """Every probe's flags as the options apply_overrides hands to it, in the probes' order."""
    from cutaway.probes.registry import plugins

    return {
        option: value
        for plugin in plugins()
        for option, value in plugin.option_values(args).items()
    }


def _parameters(args: argparse.Namespace) -> list[Parameter]:
    from cutaway.spec import fields
    from cutaway.spec.matrix import DEFAULT_MAX_VARIANTS
    from cutaway.spec.quick import parameter_list, parameter_scan

    parameters = []
    limit = DEFAULT_MAX_VARIANTS
    if args.max_variants is not None:
        limit = fields.read_max_variants(args.max_variants, ("--max-variants",))
    for kind, *values in args.parameters or ():
        if kind == "scan":
            name, low, high = values
            parameters.append(parameter_scan(name, low, high, args.step_size, max_values=limit))
        else:
            name, items = values
            parameters.append(parameter_list(name, items))
    return parameters


def looks_like_command(argument: str) -> bool:
    """A run argument that is not a file, but a command: words, or a program on PATH."""
    if argument.endswith(".toml"):
        return False
    words = argument.split()
    return len(words) > 1 or (len(words) == 1 and shutil.which(words[0]) is not None)


def command_hint(words: Sequence[str]) -> str:
    command = display(" ".join(words))
    return (
        f"{command!r} is not an experiment file; to measure a command, give it with -c: "
        f"cutaway run -c {shlex.quote(command)}"
    )
