"""The stored form of one run's profile: folded stacks with a weight and the weight's unit.

A profile is what any profiler of cutaway leaves per run: ``{stack: weight}`` where a stack is
``root;...;leaf`` (the FlameGraph format; the root frame is the process name) and every weight
is in one ``unit``: ``nanoseconds`` for time (on-CPU samples weigh their cpu-clock period,
off-CPU intervals their length), ``instructions`` for counted instructions (valgrind). Views and
the attribution read the unit; they never assume time.

Stored as a RunData per run and ``what`` (kind ``profile``, key ``on-cpu``, ``off-cpu``, ...):

    zlib( header JSON "\\n" then "stack weight\\n" lines, sorted )

Version history of the blob (``header["format"]``):

- 1 (2026-11-24): header ``format``, ``what``, ``unit``, ``events`` (samples or intervals
  folded), ``lost`` (events perf reported lost), ``backend`` (how it was recorded).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from cutaway.store.checks import StoredRecordError

KIND = "profile"
FORMAT_VERSION = 1
ON_CPU = "on-cpu"
OFF_CPU = "off-cpu"
NANOSECONDS = "nanoseconds"
INSTRUCTIONS = "instructions"
UNITS = (NANOSECONDS, INSTRUCTIONS)


class ProfileFormatError(StoredRecordError):
    """A stored profile this version cannot read (the store's run_data.data, damaged or of
    another version): bad input, as a damaged store is."""


@dataclass(frozen=True)
class Profile:
    """One run's folded stacks of one kind (``what``), weights in ``unit``."""

    what: str  # ON_CPU, OFF_CPU, or another profiler's kind ("instructions")
    unit: str  # one of UNITS
    stacks: Mapping[str, int]
    events: int = 0  # samples (on-CPU) or blocked intervals (off-CPU) folded
    lost: int = 0
    backend: str = ""
    extra: Mapping[str, object] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.stacks.values())


def encode(profile: Profile) -> bytes:
    header = {
        "format": FORMAT_VERSION,
        "what": profile.what,
        "unit": profile.unit,
        "events": profile.events,
        "lost": profile.lost,
        "backend": profile.backend,
        **({"extra": dict(profile.extra)} if profile.extra else {}),
    }
    lines = "".join(f"{stack} {profile.stacks[stack]}\n" for stack in sorted(profile.stacks))
    return zlib.compress((json.dumps(header, sort_keys=True) + "\n" + lines).encode(), 6)


def decode(data: bytes) -> Profile:
    try:
        text = zlib.decompress(data).decode()
        head, _, body = text.partition("\n")
        header = json.loads(head)
    except (zlib.error, UnicodeDecodeError, ValueError) as error:
        raise ProfileFormatError(f"run_data.data: not a stored profile: {error}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_VERSION:
        found = header.get("format") if isinstance(header, dict) else None
        raise ProfileFormatError(
            f"run_data.data: stored profile format {found!r}; this cutaway reads format "
            f"{FORMAT_VERSION}"
        )
    stacks: dict[str, int] = {}
    for line in body.split("\n"):  # not splitlines(): a frame may hold \x1c or \u2028
        if not line:
            continue
        stack, _, weight = line.rpartition(" ")
        stacks[stack] = int(weight)
    return Profile(
        what=str(header["what"]),
        unit=str(header["unit"]),
        stacks=stacks,
        events=int(header.get("events", 0)),
        lost=int(header.get("lost", 0)),
        backend=str(header.get("backend", "")),
        extra=dict(header.get("extra", {})),
    )
