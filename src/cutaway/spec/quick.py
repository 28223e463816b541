"""Quick mode: ``cutaway run -c 'CMD A' -c 'CMD B' -n A -n B`` -> a :class:`Spec`.

The CLI only translates its options into these arguments; every check lives here and raises a
:class:`SpecError` whose key is the option at fault (``-c``, ``--name``, ``--baseline``...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cutaway.model import DEFAULT_MARGIN, Spec, Variant
from cutaway.spec import fields
from cutaway.spec.command import command_for
from cutaway.spec.errors import SpecError, describe

# Longer commands make unreadable report columns, so they are numbered instead.
MAX_COMMAND_NAME_CHARS = 40
SHELL_HINT = "pass --shell to run it with /bin/sh -c"


def quick_spec(
    commands: Sequence[str],
    names: Sequence[str] = (),
    *,
    baseline: str | None = None,
    rounds: int = 10,
    warmup_rounds: int = 1,
    shell: bool = False,
    timeout_seconds: float | None = None,
    margin: float = DEFAULT_MARGIN,
    until_width: float | None = None,
    max_time_seconds: float | None = None,
    env: Mapping[str, str] | None = None,
) -> Spec:
    """One variant per command, in order; the first is the baseline unless ``baseline`` names
    another. Names default to the command itself when it is short, else "command N"."""
    if not commands:
        raise SpecError("give at least one command", key="-c")
    for command in commands:
        if not isinstance(command, str) or not command.strip():
            raise SpecError(f"expected a command, found {describe(command)}", key="-c")
    variant_names = _variant_names(commands, names)
    if baseline is None:
        baseline = variant_names[0]
    elif baseline not in variant_names:
        valid = ", ".join(describe(name) for name in variant_names)
        message = f"no variant is named {describe(baseline)} (variants: {valid})"
        raise SpecError(message, key="--baseline")
    variant_env = _read_env(env or {})
    variants = tuple(
        Variant(
            name=name,
            command=command_for(command, shell=shell, key_path=("-c",), shell_hint=SHELL_HINT),
            shell=shell,
            env=variant_env,
        )
        for name, command in zip(variant_names, commands, strict=True)
    )
    return Spec(
        name="quick: " + " vs ".join(variant_names),
        variants=variants,
        baseline=baseline,
        rounds=fields.read_rounds(rounds, ("--rounds",)),
        warmup_rounds=fields.read_warmup_rounds(warmup_rounds, ("--warmup",)),
        timeout_seconds=_optional_duration(timeout_seconds, "--timeout"),
        margin=fields.read_margin(margin, ("--margin",)),
        until_width=None
        if until_width is None
        else fields.read_until_width(until_width, ("--until",)),
        max_time_seconds=_optional_duration(max_time_seconds, "--max-time"),
    )


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


def _optional_duration(seconds: float | None, option: str) -> float | None:
    return None if seconds is None else fields.read_positive_duration(seconds, (option,))
