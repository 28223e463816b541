"""``[[conditions]]``: the states a variant is measured in, such as cold and warm.

Every declared variant (after the matrix) is copied once per condition, named
``VARIANT/CONDITION``, with the condition's ``prepare`` steps run before each of its runs,
after the variant's own ``prepare`` hook, and ``CUTAWAY_CONDITION`` set to the condition's name
in the environment of its command and hooks. The copies are variants like any other: they share
rounds, the balanced order and the paired analysis. Comparisons follow the two axes
(cutaway.compare): within each condition every variant against the baseline, and for each
variant every condition against the first one. A declared variant's ``setup`` and ``cleanup``
run once for all its copies (the runner runs them per family): a server started for a variant
serves it in every condition."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from cutaway.model import Condition, Hooks, Variant
from cutaway.spec import fields
from cutaway.spec.errors import KeyPath, SpecError, describe, expected

CONDITION_KEYS = ("name", "prepare")
SEPARATOR = "/"  # between a variant's name and its condition's
CONDITION_VARIABLE = "CUTAWAY_CONDITION"  # the condition's name, for the command and hooks


def read_conditions(value: object, key_path: KeyPath = ("conditions",)) -> tuple[Condition, ...]:
    if not isinstance(value, list) or not value:
        raise expected('a non-empty array of tables [[conditions]] with a "name"', value, key_path)
    conditions: list[Condition] = []
    for index, table in enumerate(value):
        at = (*key_path, index)
        if not isinstance(table, dict):
            raise expected("a table with a name and prepare steps", table, at)
        for key in table:
            if key not in CONDITION_KEYS:
                known = ", ".join(CONDITION_KEYS)
                raise SpecError(f"unknown key (known keys: {known})", key_path=(*at, key))
        if "name" not in table:
            raise SpecError("a condition needs a name", key_path=at)
        name = fields.read_string(table["name"], (*at, "name")).strip()
        if SEPARATOR in name:
            raise SpecError(
                f"a condition's name cannot hold {SEPARATOR!r} (it separates variant and "
                "condition in the names of runs)",
                key_path=(*at, "name"),
            )
        if any(condition.name == name for condition in conditions):
            raise SpecError(f"condition {describe(name)} is named twice", key_path=(*at, "name"))
        prepare = (
            fields.read_hook(table["prepare"], (*at, "prepare")) if "prepare" in table else None
        )
        conditions.append(Condition(name, prepare))
    return tuple(conditions)


def apply_conditions(
    variants: Sequence[Variant], conditions: Sequence[Condition]
) -> tuple[Variant, ...]:
    """Each variant once per condition, in variant order, then condition order."""
    return tuple(
        dataclasses.replace(
            variant,
            name=f"{variant.name}{SEPARATOR}{condition.name}",
            hooks=dataclasses.replace(
                variant.hooks, prepare=_joined(variant.hooks, condition.prepare)
            ),
            env={**variant.env, CONDITION_VARIABLE: condition.name},
            condition=condition.name,
            family=variant.name,
        )
        for variant in variants
        for condition in conditions
    )


def conditioned_baseline(baseline: str, conditions: Sequence[Condition]) -> str:
    """The declared baseline's copy in the first condition."""
    return f"{baseline}{SEPARATOR}{conditions[0].name}"


def _joined(hooks: Hooks, steps: str | None) -> str | None:
    """The variant's prepare hook, then the condition's steps if it succeeded."""
    if steps is None:
        return hooks.prepare
    if hooks.prepare is None:
        return steps
    return f"{{\n{hooks.prepare}\n}} && {{\n{steps}\n}}"
