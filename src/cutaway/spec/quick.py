"""Quick mode: ``cutaway run -c 'CMD A' -c 'CMD B' -n A -n B`` -> a :class:`Spec`.

The CLI only translates its options into these arguments; every check lives here and raises a
:class:`SpecError` whose key is the option at fault (``-c``, ``--name``, ``--baseline``...).

The hyperfine options have the same meaning here: hooks (``--setup``, ``--prepare``,
``--conclude``, ``--cleanup``) given once apply to every command, given once per ``-c`` apply to
each in order; ``--parameter-scan`` and ``--parameter-list`` are the experiment file's
``[matrix]``, substituting ``{NAME}`` in commands, names and hooks by the same rules.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from cutaway.model import DEFAULT_MARGIN, Hooks, Spec, Variant, VersionSource
from cutaway.spec import fields
from cutaway.spec.command import command_for
from cutaway.spec.errors import SpecError, describe
from cutaway.spec.matrix import DEFAULT_MAX_VARIANTS, VariantTemplate, expand
from cutaway.value_class import value_class

if TYPE_CHECKING:
    from decimal import Decimal

# Longer commands make unreadable report columns, so they are numbered instead.
MAX_COMMAND_NAME_CHARS = 40
SHELL_HINT = "pass --shell to run it with /bin/sh -c"
HOOK_OPTIONS = {
    "setup": "--setup",
    "prepare": "--prepare",
    "conclude": "--conclude",
    "cleanup": "--cleanup",
}
PARAMETER_OPTIONS = "--parameter-scan/--parameter-list"
VERSION_OPTION = "--variant-version"
# The experiment's name lists its variants up to this many.
MAX_NAMED_VARIANTS = 4
# What --shell may name besides a program: "sh" is /bin/sh -c (a variant's shell = true),
# "none" is no shell at all (hyperfine's -N).
SHELL_SH, SHELL_NONE = "sh", "none"


@value_class
class Parameter:
    """One parameter of a quick-mode sweep: its name, its values as text, and the option that
    gave it (for messages)."""

    name: str
    values: tuple[str, ...]
    option: str


def parameter_scan(
    name: str,
    minimum: str,
    maximum: str,
    step: str | None = None,
    *,
    max_values: int = DEFAULT_MAX_VARIANTS,
) -> Parameter:
    """hyperfine's ``--parameter-scan NAME MIN MAX [--parameter-step-size STEP]``: MIN, MIN+STEP,
    ... up to MAX included. STEP defaults to 1; decimals are exact (0.1 0.3 step 0.1 gives 0.1,
    0.2, 0.3) and whole numbers are written without a fraction. More than ``max_values`` values
    (the variant limit, ``--max-variants``) is refused before any is made: a typo such as
    ``--parameter-scan N 1 100000000`` is not an experiment."""
    from decimal import Decimal  # for scans only: 2 ms of every `cutaway run` otherwise

    option = "--parameter-scan"
    _check_parameter_name(name, option)
    low = _decimal(minimum, option, "MIN")
    high = _decimal(maximum, option, "MAX")
    delta = Decimal(1) if step is None else _decimal(step, "--parameter-step-size", "the step")
    if delta <= 0:
        raise SpecError(f"expected a step > 0, found {describe(step)}", key="--parameter-step-size")
    if high < low:
        message = f"MAX ({maximum}) is below MIN ({minimum}): nothing to scan"
        raise SpecError(message, key=option)
    count = int((high - low) / delta) + 1
    if count > max_values:
        message = (
            f"{count} values from {minimum} to {maximum} in steps of {delta}: more than the "
            f"limit of {max_values} variants (give a larger --parameter-step-size, or set "
            "--max-variants higher if that many is meant)"
        )
        raise SpecError(message, key=option)
    return Parameter(name, tuple(_render(low + index * delta) for index in range(count)), option)


def parameter_list(name: str, values: str) -> Parameter:
    """hyperfine's ``--parameter-list NAME a,b,c``: the values, comma-separated, in order."""
    option = "--parameter-list"
    _check_parameter_name(name, option)
    items = tuple(values.split(","))
    for index, item in enumerate(items):
        if item in items[:index]:
            raise SpecError(f"duplicate value {describe(item)} for {name}", key=option)
    return Parameter(name, items, option)


def _check_parameter_name(name: str, option: str) -> None:
    if not name.isidentifier() or not name.isascii():
        message = (
            f"a parameter name must be an identifier (letters, digits, _), found "
            f"{describe(name)}, so that it can be written as {{NAME}}"
        )
        raise SpecError(message, key=option)


def _decimal(text: str, option: str, what: str) -> Decimal:
    from decimal import Decimal, InvalidOperation

    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        value = Decimal("NaN")
    if not value.is_finite():
        raise SpecError(f"expected a number for {what}, found {describe(text)}", key=option)
    return value


def _render(value: Decimal) -> str:
    if value == value.to_integral_value():
        return str(int(value))
    return str(value)


def quick_spec(
    commands: Sequence[str],
    names: Sequence[str] = (),
    *,
    baseline: str | None = None,
    rounds: int = 10,
    warmup_rounds: int = 1,
    shell: bool | str = False,
    timeout_seconds: float | None = None,
    margin: float = DEFAULT_MARGIN,
    until_width: float | None = None,
    max_time_seconds: float | None = None,
    env: Mapping[str, str] | None = None,
    hooks: Mapping[str, Sequence[str]] | None = None,
    parameters: Sequence[Parameter] = (),
    max_variants: int | None = None,
    versions: Sequence[str] = (),
) -> Spec:
    """One variant per command (per command and combination of ``parameters``), in order; the
    first is the baseline unless ``baseline`` names another. Names default to the command
    itself when it is short, else "command N"; under parameters, see :func:`_templates`.

    ``shell`` is False or "none" (run the command directly), True or "sh" (``/bin/sh -c``, a
    variant's ``shell``), or another shell's name or path ("bash": ``bash -c COMMAND``).
    ``hooks`` maps "setup"... "cleanup" to one piece of shell code (every variant) or one per
    command, in order. ``versions`` (``--variant-version``) likewise: one version for every
    variant, or one per command, in order."""
    if not commands:
        raise SpecError("give at least one command", key="-c")
    for command in commands:
        if not isinstance(command, str) or not command.strip():
            raise SpecError(f"expected a command, found {describe(command)}", key="-c")
    shell_program = _read_shell(shell)
    limit = DEFAULT_MAX_VARIANTS
    if max_variants is not None:
        limit = fields.read_max_variants(max_variants, ("--max-variants",))
    matrix = _read_parameters(parameters)
    variant_env = _read_env(env or {})
    hooks_of = _read_hooks(hooks or {}, commands)
    templates = _templates(commands, names, shell_program, hooks_of, bool(matrix))
    templates = [
        replace(template, version=version)
        for template, version in zip(templates, _read_versions(versions, commands), strict=True)
    ]
    try:
        expanded = expand(templates, matrix, max_variants=limit, how_to_raise="--max-variants")
    except SpecError as error:
        raise _quick_error(error) from None
    variant_names = _check_expanded_names([template.name for template in expanded])
    if baseline is None:
        baseline = variant_names[0]
    elif baseline not in variant_names:
        valid = ", ".join(describe(name) for name in variant_names)
        message = f"no variant is named {describe(baseline)} (variants: {valid})"
        raise SpecError(message, key="--baseline")
    variants = tuple(_variant(template, shell_program, variant_env) for template in expanded)
    return Spec(
        name=_experiment_name([v.name for v in variants]),
        variants=variants,
        baseline=baseline,
        rounds=fields.read_rounds(rounds, ("--rounds",)),
        warmup_rounds=fields.read_warmup_rounds(warmup_rounds, ("--warmup",)),
        timeout_seconds=_optional_duration(timeout_seconds, "--timeout", fields.read_run_timeout),
        margin=fields.read_margin(margin, ("--margin",)),
        until_width=None
        if until_width is None
        else fields.read_until_width(until_width, ("--until",)),
        max_time_seconds=_optional_duration(max_time_seconds, "--max-time", fields.read_max_time),
    )


def _read_shell(shell: bool | str) -> str | None:
    """None for no shell, "sh" for /bin/sh -c, else the program to run as ``PROGRAM -c``."""
    if shell is True or shell == SHELL_SH:
        return SHELL_SH
    if shell is False or shell == SHELL_NONE:
        return None
    if not isinstance(shell, str) or not shell.strip():
        raise SpecError(f"expected a shell, found {describe(shell)}", key="--shell")
    if shutil.which(shell) is None:
        where = "is not an executable file" if os.sep in shell else "is not on PATH"
        message = f"{describe(shell)} {where} (give sh, bash..., or none for no shell)"
        raise SpecError(message, key="--shell")
    return shell


def _read_parameters(parameters: Sequence[Parameter]) -> dict[str, tuple[str, ...]]:
    matrix: dict[str, tuple[str, ...]] = {}
    for parameter in parameters:
        if parameter.name in matrix:
            message = f"the parameter {parameter.name} is given twice"
            raise SpecError(message, key=parameter.option)
        if not parameter.values:
            raise SpecError(f"no values for {parameter.name}", key=parameter.option)
        matrix[parameter.name] = parameter.values
    return matrix


def _read_hooks(hooks: Mapping[str, Sequence[str]], commands: Sequence[str]) -> list[Hooks]:
    """The hooks of each command: a hook given once is every command's, a hook given once per
    command is each one's, in order."""
    per_command: list[dict[str, str]] = [{} for _ in commands]
    for hook, codes in hooks.items():
        option = HOOK_OPTIONS[hook]
        if not codes:
            continue
        if len(codes) not in (1, len(commands)):
            message = (
                f"got {len(codes)} {option} for {len(commands)} commands: give it once "
                "(for every command) or once per -c, in the same order"
            )
            raise SpecError(message, key=option)
        for index in range(len(commands)):
            code = fields.read_hook(codes[index if len(codes) > 1 else 0], (option,))
            if code is not None:
                per_command[index][hook] = code
    return [Hooks(**hooks_of) for hooks_of in per_command]


def _read_versions(versions: Sequence[str], commands: Sequence[str]) -> list[VersionSource | None]:
    """Each command's own version: ``--variant-version`` given once is every command's, given
    once per command is each one's, in order (as a hook option)."""
    if not versions:
        return [None] * len(commands)
    if len(versions) not in (1, len(commands)):
        message = (
            f"got {len(versions)} {VERSION_OPTION} for {len(commands)} commands: give it once "
            "(for every command) or once per -c, in the same order"
        )
        raise SpecError(message, key=VERSION_OPTION)
    where = (VERSION_OPTION,)
    texts = [
        fields.read_text_without_nul(fields.read_string(text, where), where).strip()
        for text in versions
    ]
    return [
        VersionSource("version", texts[index if len(texts) > 1 else 0], where)
        for index in range(len(commands))
    ]


def _templates(
    commands: Sequence[str],
    names: Sequence[str],
    shell_program: str | None,
    hooks: Sequence[Hooks],
    has_parameters: bool,
) -> list[VariantTemplate]:
    """One template per command. Its name is the --name given, else the default name; under
    parameters a name without placeholders gets them appended (``fast[N=1]``), and a single
    unnamed command is named by its parameters alone (``N=1``), as the file's ``[matrix]``
    names the implicit variant."""
    variant_names: list[str | None] = list(_variant_names(commands, names))
    if has_parameters and not names and len(commands) == 1:
        variant_names = [None]
    return [
        VariantTemplate(
            key_path=(),
            name=name,
            command=command,
            command_key_path=("-c",),
            shell=shell_program == SHELL_SH,
            hooks={
                hook: code for hook in HOOK_OPTIONS if (code := getattr(hooks_of, hook)) is not None
            },
        )
        for name, command, hooks_of in zip(variant_names, commands, hooks, strict=True)
    ]


def _quick_error(error: SpecError) -> SpecError:
    """A substitution error as quick mode names things: the option, not a file's key."""
    options = {"name": "--name", "matrix": PARAMETER_OPTIONS, "variants": "-c", **HOOK_OPTIONS}
    key = error.key or "-c"
    message = error.message.replace(
        "is not a matrix parameter", "is not a parameter (--parameter-scan, --parameter-list)"
    )
    return SpecError(message, key=options.get(key, key))


def _check_expanded_names(names: Sequence[str | None]) -> list[str]:
    seen: list[str] = []
    for name in names:
        assert name is not None  # every template is named once expanded
        if name in seen:
            message = (
                f"two variants are named {describe(name)}: give each -c a --name "
                "with the parameters in it, such as -n 'fast {N}'"
            )
            raise SpecError(message, key="--name")
        seen.append(name)
    return seen


def _variant(template: VariantTemplate, shell_program: str | None, env: dict[str, str]) -> Variant:
    assert template.name is not None and isinstance(template.command, str)
    command: str | tuple[str, ...]
    if shell_program is None or shell_program == SHELL_SH:
        command = command_for(
            template.command,
            shell=shell_program == SHELL_SH,
            key_path=("-c",),
            shell_hint=SHELL_HINT,
        )
    else:
        # Another shell runs the string as its code: bash -c 'CMD', as hyperfine --shell=bash.
        command = (shell_program, "-c", template.command)
    return Variant(
        name=template.name,
        command=command,
        shell=template.shell,
        env=env,
        hooks=Hooks(**template.hooks),
        params=template.params,
        version=template.version,
    )


def _experiment_name(names: Sequence[str]) -> str:
    if len(names) <= MAX_NAMED_VARIANTS:
        return "quick: " + " vs ".join(names)
    shown = " vs ".join(names[: MAX_NAMED_VARIANTS - 1])
    return f"quick: {shown} vs ... ({len(names)} variants)"


def _variant_names(commands: Sequence[str], names: Sequence[str]) -> list[str]:
    if not names:
        return _default_names(commands)
    if len(names) != len(commands):
        message = (
            f"got {len(names)} names for {len(commands)} commands: "
            "give one --name per -c, in the same order"
        )
        raise SpecError(message, key="--name")
    seen: set[str] = set()
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise SpecError(f"expected a non-empty name, found {describe(name)}", key="--name")
        if name in seen:
            raise SpecError(f"duplicate name {describe(name)}", key="--name")
        seen.add(name)
    return list(names)


def _default_names(commands: Sequence[str]) -> list[str]:
    """Each command's text (whitespace collapsed) when short, else "command N"; a repeated
    command (an A/A comparison) gets " (2)", " (3)"... so that every name is unique."""
    names: list[str] = []
    for number, command in enumerate(commands, start=1):
        text = " ".join(command.split())
        base = text if len(text) <= MAX_COMMAND_NAME_CHARS else f"command {number}"
        name, copy = base, 1
        while name in names:
            copy += 1
            name = f"{base} ({copy})"
        names.append(name)
    return names


def _read_env(env: Mapping[str, str]) -> dict[str, str]:
    for name, value in env.items():
        fields.read_env_name(name, ("--env",))
        if not isinstance(value, str) or "\0" in value:
            raise SpecError(f"expected a string for {name}, found {describe(value)}", key="--env")
    return dict(env)


def _optional_duration(
    seconds: float | None, option: str, read: fields.Reader[float]
) -> float | None:
    return None if seconds is None else read(seconds, (option,))
