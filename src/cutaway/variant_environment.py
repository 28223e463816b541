"""How a variant sees the machine: its environment (cutaway's own with the variant's additions,
as hyperfine does) and its texts and paths with ``{param}`` and ``$NAME`` substituted.

A low module: the executor, the hooks, the declared metrics and every probe's capture (the load
phase finds its server's pid file through it) read a variant's world the same way."""

from __future__ import annotations

import os
import re

from cutaway.model import Variant

_PARAM = re.compile(r"\{(\w+)\}")
_VARIABLE = re.compile(r"\$(?:(\w+)|\{(\w+)\})")


def run_environment(variant: Variant) -> dict[str, str]:
    """cutaway's own environment with the variant's additions, as hyperfine does."""
    env = dict(os.environ)
    env.update(variant.env)
    return env


def substitute(text: str, variant: Variant, *, variables: bool) -> str:
    """``{param}`` replaced by the variant's matrix value (unknown names are left as they are);
    with ``variables``, ``$NAME`` and ``${NAME}`` by the variant's environment too."""
    text = _PARAM.sub(lambda m: variant.params.get(m.group(1), m.group(0)), text)
    if variables:
        env = run_environment(variant)
        text = _VARIABLE.sub(lambda m: env.get(m.group(1) or m.group(2), m.group(0)), text)
    return text


def variant_path(text: str, variant: Variant) -> str:
    """A path as the variant sees it: substituted, relative to its cwd when relative."""
    path = substitute(text, variant, variables=True)
    return os.path.join(variant.cwd, path) if variant.cwd and not os.path.isabs(path) else path
