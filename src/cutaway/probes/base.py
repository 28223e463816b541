"""The one small interface every probe implements.

A probe watches measured runs (never hooks) and keeps what it saw with the run. Its lifecycle,
as in pyperf's hooks: ``check`` before anything runs (fail early, say which backend will be
used), ``overhead`` (what the probe itself costs per recorded event, measured here and now:
a tool that measures must measure itself), then around every measured run ``before_run`` (what
to add to the run's environment or put in front of its command) and ``after_run`` (collect
what the run left, return it as RunData for the store, clean up), and ``close`` at the end,
also after a failure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from cutaway.model import RunData


class ProbeError(Exception):
    """A probe cannot work here (a missing library or tool)."""


@dataclass(frozen=True)
class Attachment:
    """How a probe attaches to one run: variables added to its environment, and a command put
    in front of it (a tracer)."""

    env: Mapping[str, str] = field(default_factory=dict)
    argv_prefix: tuple[str, ...] = ()


class Probe(Protocol):
    name: str

    def check(self) -> str:
        """Raise ProbeError if the probe cannot work here; else describe its backend."""

    def overhead(self) -> float | None:
        """Seconds the probe adds per recorded event, measured now; None if not measurable."""

    def before_run(self, environment: Mapping[str, str]) -> Attachment:
        """How to attach to the next measured run, whose environment is ``environment``."""

    def after_run(self) -> list[RunData]:
        """What the run that just ended left, ready to store with it."""

    def close(self) -> None: ...
