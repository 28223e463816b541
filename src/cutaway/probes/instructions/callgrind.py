"""callgrind's output file (format version 1) -> folded stacks weighted in instructions.

Run with ``--separate-callers=N``, callgrind names each function by its calling context,
``leaf'caller'caller's caller'...`` (at most N callers): the self cost of each such context is
then the weight of one folded stack, exactly, and inclusive costs follow from the stacks
(a function counted once per stack, so recursion is not counted twice). Deeper stacks lose
their outermost frames: they are rooted at TRUNCATED instead, so the frames that remain keep
their weights and no stack is taken for a different one.

The format (https://valgrind.org/docs/manual/cl-format.html): ``fn=`` starts a function's
cost lines, ``calls=`` announces that the next cost line is a call's inclusive cost (not the
caller's own), names may be compressed as ``(id) name`` then ``(id)``, positions may be
relative (``+n``, ``-n``) or repeated (``*``). A function without a symbol is named by its
address (``0x0000000000001130``), which moves with every build: it is named ``[object]`` (the
file name of the ``ob=`` it is in) instead, as perf's folding names such a frame, unless that
address is found in several objects. Only the first event (Ir: instructions
executed) is read. ``summary:`` (or ``totals:``) is the whole process's count."""

from __future__ import annotations

from dataclasses import dataclass, field

CONTEXT_SEPARATOR = "'"
TRUNCATED = "[deeper frames]"
_POSITION_START = frozenset("0123456789+-*")


class CallgrindFormatError(ValueError):
    """A file that is not callgrind's output."""


@dataclass
class CallgrindProfile:
    """One process: its command, whole-process instruction count and folded stacks (leaf
    last, without the process name at the root) with their self instructions."""

    command: str = ""
    total: int = 0
    stacks: dict[str, int] = field(default_factory=dict)


def _name(value: str, names: dict[str, str]) -> str:
    """A possibly compressed name: ``(id) name`` defines, ``(id)`` refers."""
    if value.startswith("("):
        close = value.find(")")
        if close > 0:
            key, rest = value[1:close], value[close + 1 :].strip()
            if rest:
                names[key] = rest
                return rest
            return names.get(key, value)
    return value


def context_stack(context: str, max_callers: int) -> str:
    """callgrind's ``leaf'caller'...`` -> a folded stack ``...;caller;leaf``, rooted at
    TRUNCATED when the context reached ``max_callers`` callers (outer frames lost)."""
    frames = context.split(CONTEXT_SEPARATOR)[::-1]
    if len(frames) > max_callers:
        frames.insert(0, TRUNCATED)
    return ";".join(frames)


def _first_cost(line: str) -> int:
    """The first event's count on a cost line (one position, then the events; a missing
    event is 0)."""
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 else 0


def parse_callgrind(text: str, max_callers: int) -> CallgrindProfile:
    """One callgrind output file (see the module's docstring)."""
    if not text.startswith(("# callgrind format", "version:", "creator:")):
        raise CallgrindFormatError("not a callgrind output file")
    profile = CallgrindProfile()
    functions: dict[str, str] = {}
    objects: dict[str, str] = {}
    modules: dict[str, set[str]] = {}  # an unnamed function's address -> the objects it is in
    current: str | None = None
    own: dict[str, int] = {}
    in_call = False
    current_object = "???"
    summary = totals = None
    for line in text.split("\n"):
        if not line:
            continue
        first = line[0]
        if first in _POSITION_START:
            if in_call:
                in_call = False  # a call's inclusive cost: the callee's, not this function's
            elif current is not None:
                own[current] = own.get(current, 0) + _first_cost(line)
            continue
        key, _, value = line.partition("=")
        if key == "fn":
            current = _name(value, functions)
            leaf = current.split(CONTEXT_SEPARATOR, 1)[0]
            if leaf.startswith("0x"):
                modules.setdefault(leaf, set()).add(current_object)
        elif key == "ob":
            current_object = _name(value, objects)
        elif key == "cfn" or key == "cfi" or key == "cfl" or key == "cob":
            if key == "cfn":
                _name(value, functions)  # may define a compressed name used later by fn=
            elif key == "cob":
                _name(value, objects)  # likewise for ob=
        elif key == "calls":
            in_call = True
        elif line.startswith("summary:"):
            summary = int(line.split()[1])
        elif line.startswith("totals:"):
            totals = int(line.split()[1])
        elif line.startswith("cmd:"):
            profile.command = line[4:].strip()
    named = {
        address: f"[{found.pop().rsplit('/', 1)[-1]}]"
        for address, found in modules.items()
        if len(found) == 1 and next(iter(found)) != "???"
    }
    for context, weight in own.items():
        if weight:
            frames = context.split(CONTEXT_SEPARATOR)
            context = CONTEXT_SEPARATOR.join(named.get(frame, frame) for frame in frames)
            stack = context_stack(context, max_callers)
            profile.stacks[stack] = profile.stacks.get(stack, 0) + weight
    found = summary if summary is not None else totals
    profile.total = found if found is not None else sum(profile.stacks.values())
    return profile
