"""The stacks that more than one probe stores and more than one analysis reads (the kind
``PROFILE_RECORDS`` of cutaway.probes.core): the profile probe's samples and intervals, the
instructions probe's counted instructions, read by the profile probe's analysis and by the
attribution. Here, outside both probes, so that each imports it and neither the other.

The stored form of one run's profile: folded stacks with a weight and the weight's unit.
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
import re
import zlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cutaway.store.checks import StoredRecordError

KIND = "profile"
FORMAT_VERSION = 1
ON_CPU = "on-cpu"
OFF_CPU = "off-cpu"
NANOSECONDS = "nanoseconds"
INSTRUCTIONS = "instructions"
UNITS = (NANOSECONDS, INSTRUCTIONS)
KIND_ORDER = (ON_CPU, OFF_CPU, INSTRUCTIONS)  # the order of the kinds in every report
# The scheduler's own frames at the leaf of every off-CPU stack (with perf's kernel mark).
_SCHEDULER_FRAME = re.compile(
    r"(?:__)?(?:schedule|preempt_schedule|io_schedule|finish_task_switch)\w*(?:_\[k\])?"
)
# A frame that is an address, not a function: a bare one (callgrind's ``0x0000000000001130``
# when it found no module) or one relative to its module (``prog+0x1a2b``).
_BARE_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_MODULE_ADDRESS = re.compile(r"(?P<module>[^;+]+)\+0x[0-9a-fA-F]+")


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


# -- weights: what the analyses read of the stacks ------------------------------------------


def report_unit(unit: str) -> str:
    return "seconds" if unit == NANOSECONDS else unit


def blocking_leaf(frames: Sequence[str]) -> str:
    """The leaf of an off-CPU stack once the scheduler's own frames are taken off: where the
    thread blocked (do_nanosleep, futex_wait_queue, a mutex), seed 002's cv_wait."""
    index = len(frames) - 1
    while index > 0 and _SCHEDULER_FRAME.match(frames[index]):
        index -= 1
    return frames[index]


def function_name(frame: str) -> str:
    """The function a frame counts for: an unsymbolized address is grouped by its module
    (``prog+0x1a2b`` -> ``[prog]``, as perf's ``[unknown]`` in ``prog`` folds), a bare address
    as ``[unknown]``. An address moves with every build and every change of the code before it,
    so counted one by one, the same unnamed code would read as one function gone and another
    come, two changes where there is none."""
    if _BARE_ADDRESS.fullmatch(frame):
        return "[unknown]"
    found = _MODULE_ADDRESS.fullmatch(frame)
    if found is not None:
        module = found["module"]
        return f"[{module[module.rfind('/') + 1 :]}]"
    return frame


def function_weights(
    stacks: dict[str, int], *, off_cpu: bool = False
) -> tuple[dict[str, int], dict[str, int]]:
    """(self, inclusive) weight of every function: self is the leaf's (off the CPU: the
    leaf below the scheduler's frames), inclusive counts a stack once for each distinct
    function on it (recursion is not counted twice)."""
    own: dict[str, int] = defaultdict(int)
    inclusive: dict[str, int] = defaultdict(int)
    for stack, weight in stacks.items():
        frames = [function_name(frame) for frame in stack.split(";")[1:]]  # root: the process
        if not frames:
            continue
        own[blocking_leaf(frames) if off_cpu else frames[-1]] += weight
        for function in set(frames):
            inclusive[function] += weight
    return own, inclusive


# -- programs: whether their stacks can be named -------------------------------------------


def has_symbol_table(path: str) -> bool | None:
    """Whether an ELF file has a .symtab section (None: not a 64-bit little-endian ELF file,
    or unreadable). A stripped binary keeps only .dynsym, the symbols it exports: perf then
    cannot name its internal functions."""
    try:
        with open(path, "rb") as file:
            header = file.read(64)
            if len(header) < 64 or header[:6] != b"\x7fELF\x02\x01":
                return None
            section_offset = int.from_bytes(header[0x28:0x30], "little")
            entry_size = int.from_bytes(header[0x3A:0x3C], "little")
            count = int.from_bytes(header[0x3C:0x3E], "little")
            file.seek(section_offset)
            table = file.read(entry_size * count)
    except OSError:
        return None
    types = (
        int.from_bytes(table[i + 4 : i + 8], "little") for i in range(0, len(table), entry_size)
    )
    return any(kind == 2 for kind in types)  # SHT_SYMTAB
