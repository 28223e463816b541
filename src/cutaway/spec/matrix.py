"""Parameter sweeps: the ``[matrix]`` table, ``{param}`` substitution and variant expansion.

The cross product of the matrix parameters (first parameter varying slowest) is applied to every
declared variant. Only ``{identifier}`` is a placeholder, ``{{`` and ``}}`` are literal braces,
and any other brace is left alone so that shell code such as ``awk '{print $1}'`` still works.
Without a matrix nothing is substituted at all.

The variants are counted before anything is expanded: five parameters of forty values are
10**8 variants, gigabytes of memory before the first run, so more than a limit
(:data:`DEFAULT_MAX_VARIANTS` unless the experiment says otherwise) is refused with the count.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import field, replace

from cutaway.model import VersionSource
from cutaway.spec.errors import KeyPath, SpecError, describe, expected
from cutaway.value_class import value_class

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# More variants than this is a runaway matrix (or a typo), not an experiment; the file's
# max_variants or --max-variants raises (or lowers) it.
DEFAULT_MAX_VARIANTS = 10_000

# The name of each matrix parameter with its values rendered as text, in file order.
Matrix = Mapping[str, tuple[str, ...]]


@value_class
class VariantTemplate:
    """A variant as declared, before (or after) matrix substitution.

    Every text field carries the key path it was read from, so that an undefined placeholder
    is reported at the right key: a variant that inherits the top-level ``command`` reports
    ``command``, not its own."""

    key_path: KeyPath  # ("variants", 2), or () for the implicit variant
    name: str | None
    command: str | tuple[str, ...]
    command_key_path: KeyPath
    shell: bool
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    hooks: Mapping[str, str] = field(default_factory=dict)  # "setup" ... "cleanup" -> shell code
    params: Mapping[str, str] = field(default_factory=dict)
    # Standard input and output as written (checked once substituted), with their key paths.
    stdin: str | None = None
    stdin_key_path: KeyPath = ()
    stdout: str | None = None
    stdout_key_path: KeyPath = ()
    version: VersionSource | None = None  # its key_path says where it was written


def read_matrix(raw: object) -> dict[str, tuple[str, ...]]:
    """Validate the ``[matrix]`` table and render its values as text (bools as true/false)."""
    if not isinstance(raw, dict):
        raise expected("a table of parameter name -> array of values", raw, ("matrix",))
    matrix: dict[str, tuple[str, ...]] = {}
    for name, values in raw.items():
        key_path: KeyPath = ("matrix", name)
        if not _IDENTIFIER.fullmatch(name):
            raise SpecError(
                "a matrix parameter name must be an identifier (letters, digits, _), "
                "so that it can be written as {name}",
                key_path=key_path,
            )
        if not isinstance(values, list) or not values:
            raise expected("a non-empty array of values", values, key_path)
        rendered: list[str] = []
        for index, value in enumerate(values):
            text = render_value(value, (*key_path, index))
            if text in rendered:
                raise SpecError(f"duplicate value {describe(value)}", key_path=(*key_path, index))
            rendered.append(text)
        matrix[name] = tuple(rendered)
    return matrix


def render_value(value: object, key_path: KeyPath) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise expected("a string, integer, float or boolean", value, key_path)


def combinations(matrix: Matrix) -> list[dict[str, str]]:
    """Every combination of parameter values, the first parameter varying slowest."""
    names = list(matrix)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*matrix.values())]


def has_placeholders(text: str) -> bool:
    return any(match.group(1) is not None for match in _PLACEHOLDER.finditer(text))


def substitute(text: str, params: Mapping[str, str], key_path: KeyPath) -> str:
    """Replace ``{param}`` by its value, ``{{``/``}}`` by a brace; leave other braces alone."""

    def replacement(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return match.group()[0]
        if name not in params:
            known = ", ".join(params) or "none"
            raise SpecError(
                f"{{{name}}} is not a matrix parameter (parameters: {known}); "
                "write {{ and }} for literal braces",
                key_path=key_path,
            )
        return params[name]

    return _PLACEHOLDER.sub(replacement, text)


def expand(
    templates: Sequence[VariantTemplate],
    matrix: Matrix,
    *,
    max_variants: int = DEFAULT_MAX_VARIANTS,
    how_to_raise: str = "max_variants",
) -> list[VariantTemplate]:
    """Each template once per combination of the matrix (or once, unchanged, without one).

    More than ``max_variants`` variants raises SpecError keyed ``matrix`` (``variants`` without
    a matrix) before anything is built; ``how_to_raise`` names the key or option that raises
    the limit, for the message."""
    count = len(templates) * math.prod(len(values) for values in matrix.values())
    if count > max_variants:
        factors = [f"{len(templates)} variants"] if len(templates) > 1 else []
        factors += [str(len(values)) for values in matrix.values()]
        made = f" ({' x '.join(factors)})" if len(factors) > 1 else ""
        message = (
            f"{count} variants{made}: more than the limit of {max_variants}; "
            f"set {how_to_raise} higher if that many is meant"
        )
        raise SpecError(message, key_path=("matrix",) if matrix else ("variants",))
    if not matrix:
        return list(templates)
    return [_apply(template, params) for template in templates for params in combinations(matrix)]


def _apply(template: VariantTemplate, params: dict[str, str]) -> VariantTemplate:
    key_path = template.key_path

    def sub(text: str, *key: str | int) -> str:
        return substitute(text, params, (*key_path, *key))

    command: str | tuple[str, ...]
    if isinstance(template.command, str):
        command = substitute(template.command, params, template.command_key_path)
    else:
        command = tuple(
            substitute(argument, params, (*template.command_key_path, index))
            for index, argument in enumerate(template.command)
        )
    return replace(
        template,
        name=_expanded_name(template, params),
        command=command,
        env={name: sub(value, "env", name) for name, value in template.env.items()},
        cwd=None if template.cwd is None else sub(template.cwd, "cwd"),
        hooks={hook: sub(code, hook) for hook, code in template.hooks.items()},
        params=params,
        stdin=None
        if template.stdin is None
        else substitute(template.stdin, params, template.stdin_key_path),
        stdout=None
        if template.stdout is None
        else substitute(template.stdout, params, template.stdout_key_path),
        version=None
        if template.version is None
        else replace(
            template.version,
            text=substitute(template.version.text, params, template.version.key_path),
        ),
    )


def _expanded_name(template: VariantTemplate, params: dict[str, str]) -> str:
    label = ",".join(f"{name}={value}" for name, value in params.items())
    if template.name is None:
        return label
    name = substitute(template.name, params, (*template.key_path, "name"))
    return name if has_placeholders(template.name) else f"{name}[{label}]"
