"""What must hold before a uprobe can be placed, checked before anything runs, each failure in
words that say what to do: root (bpftrace loads BPF programs), a kernel with uprobes, bpftrace
itself, and for every target a binary that exists, is ELF, has symbols, and defines each
function named (an unknown one is named with the nearest ones the binary has)."""

from __future__ import annotations

import difflib
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cutaway.probes.base import ProbeError
from cutaway.probes.uprobes.elf import NotElf, function_symbols
from cutaway.probes.uprobes.settings import UprobeTarget

# The kernel's dynamic PMU for uprobes (perf_event_open type), which bpftrace attaches through.
UPROBE_PMU = Path("/sys/bus/event_source/devices/uprobe")
# A function name bpftrace can put in a probe without quoting (C and mangled C++ names).
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]*")
NEAREST = 5  # nearest names offered for an unknown one


@dataclass(frozen=True)
class ResolvedTarget:
    """A target whose binary is resolved (its real path) and whose functions all exist in it."""

    binary: str  # as the user wrote it
    path: str  # the real path, where the uprobes go
    functions: tuple[str, ...]


def check_system(euid: int | None = None, pmu: Path = UPROBE_PMU) -> str:
    """bpftrace's path, or ProbeError saying why uprobes cannot be used here."""
    euid = os.geteuid() if euid is None else euid
    if euid != 0:
        raise ProbeError(
            "the uprobes probe needs root (bpftrace loads BPF programs): run cutaway as root, "
            "e.g. with sudo"
        )
    if not pmu.exists():
        raise ProbeError(
            f"this kernel has no uprobes ({pmu} is missing: CONFIG_UPROBE_EVENTS is off, or "
            "this is a container without the host's /sys)"
        )
    bpftrace = shutil.which("bpftrace")
    if bpftrace is None:
        raise ProbeError("the uprobes probe needs bpftrace (apt-get install bpftrace)")
    return bpftrace


def resolve_binary(binary: str) -> str:
    """The real path of ``binary``: a path, or a command name looked up in PATH and the sbin
    directories (slapd is in /usr/sbin, often not in a user's PATH)."""
    if "/" in binary:
        path = Path(binary)
    else:
        search = os.pathsep.join([os.environ.get("PATH", os.defpath), "/usr/sbin", "/sbin"])
        found = shutil.which(binary, path=search)
        if found is None:
            raise ProbeError(f"uprobes: no program named {binary!r} in PATH or /usr/sbin")
        path = Path(found)
    if not path.is_file():
        raise ProbeError(f"uprobes: no such file: {binary}")
    return str(path.resolve())


def resolve_target(target: UprobeTarget) -> ResolvedTarget:
    """The target with its binary resolved and every function checked against its symbols."""
    path = resolve_binary(target.binary)
    try:
        symbols = function_symbols(path)
    except NotElf as error:
        raise ProbeError(f"uprobes: {error}") from None
    except OSError as error:
        raise ProbeError(f"uprobes: cannot read {path}: {error.strerror}") from None
    if not symbols.functions:
        raise ProbeError(
            f"uprobes: {path} has no function symbols (a stripped static binary?): a uprobe "
            "needs one per function; install its debug symbols or build it with symbols"
        )
    for function in target.functions:
        if function in symbols.functions:
            continue
        nearest = difflib.get_close_matches(function, sorted(symbols.functions), NEAREST, 0.6)
        hint = f"; nearest: {', '.join(nearest)}" if nearest else ""
        which = (
            "its symbols"
            if symbols.has_symtab
            else f"its {len(symbols.functions)} exported functions (it is stripped: the others "
            "need its debug symbols)"
        )
        raise ProbeError(f"uprobes: no function {function!r} in {path} among {which}{hint}")
    return ResolvedTarget(target.binary, path, target.functions)


def check_names(targets: Sequence[UprobeTarget]) -> None:
    """Names usable in a bpftrace program: ValueError otherwise. One function may be named in
    several binaries: it is one phase (two builds of a server, each variant running its own)."""
    if not targets:
        raise ValueError("no function selected")
    for target in targets:
        if not target.functions:
            raise ValueError(f"no function selected in {target.binary}")
        for function in target.functions:
            if not _SYMBOL.fullmatch(function):
                raise ValueError(f"{function!r} is not a function name")


def merge_same_files(targets: Sequence[ResolvedTarget]) -> tuple[ResolvedTarget, ...]:
    """Targets naming one file twice (``slapd`` and ``/usr/sbin/slapd``) as one: a function
    probed twice would be recorded twice."""
    merged: dict[str, ResolvedTarget] = {}
    for target in targets:
        known = merged.get(target.path)
        if known is None:
            merged[target.path] = target
            continue
        functions = tuple(dict.fromkeys((*known.functions, *target.functions)))
        merged[target.path] = ResolvedTarget(known.binary, known.path, functions)
    return tuple(merged.values())
