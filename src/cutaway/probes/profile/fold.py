"""Folding ``perf script`` output into stacks: the FlameGraph text format, one line per unique
stack, ``root;caller;...;leaf weight``.

The rules are inferno's (``inferno-collapse-perf`` 0.12, itself a port of Brendan Gregg's
stackcollapse-perf.pl), so that our folded output is byte-for-byte theirs (a golden test
compares them on recorded perf outputs): the root frame is the process name (spaces become
``_``); a frame is the symbol without its ``+0x..`` offset and its argument list; an unknown
symbol becomes ``[its module's file name]``; ``;`` in a name becomes ``:``; only the first
event type seen is folded; each sample weighs its period when perf printed one (for cpu-clock,
nanoseconds of CPU), else 1; lines are sorted.

Speed: :func:`cutaway.probes.profile.native_fold.fold_perf_script` hands the whole text to the C
folder (native/cw_fold.c), which folds exactly as :func:`fold_lines` does, when it is built. In
Python, the text is split at blank lines into events (one C-level split), and each event's stack
(its lines after the header) is looked up whole in a dictionary before any line is parsed, so a
stack seen before (a hot loop yields few distinct ones) costs one hash. Each distinct stack line is
also folded once. Input with what the fast path does not handle (comment lines inside, whitespace-
only lines, a header perf would not write) is folded by :func:`fold_lines`, the line-by-line state
machine, which is the reference both are tested against."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

# The first all-digit word (or pid/tid) after the command name: "comm 123 ..." or
# "comm 12/34 ...". inferno scans for it character by character; this is the same rule.
_TID_WORD = re.compile(r"(?<= )([0-9/]+) ")
_PERIOD = re.compile(r"\+?[0-9]+")
_RUST_HASH = re.compile(r"h[0-9a-fA-F]{16}")
_VMLINUX_SUFFIX = re.compile(r"[A-Za-z0-9._-]*")
_HEX = re.compile(r"[0-9a-fA-F]*")
# What forces the line-by-line path: a comment line, a whitespace-only (not empty) line. One
# pattern per case, each starting with a literal "\n" that re finds fast: an alternation would
# try every position and cost more than the folding.
_BLANKISH_LINE = re.compile(r"\n[^\S\n]+(?:\n|$)")
_RUST_ESCAPES = (
    ("$SP$", "@"),
    ("$BP$", "*"),
    ("$RF$", "&"),
    ("$LT$", "<"),
    ("$GT$", ">"),
    ("$LP$", "("),
    ("$RP$", ")"),
    ("$C$", ","),
    ("$u7e$", "~"),
    ("$u20$", " "),
    ("$u27$", "'"),
    ("$u3d$", "="),
    ("$u5b$", "["),
    ("$u5d$", "]"),
    ("$u7b$", "{"),
    ("$u7d$", "}"),
    ("$u3b$", ";"),
    ("$u2b$", "+"),
    ("$u21$", "!"),
    ("$u22$", '"'),
)
_U64_LIMIT = 1 << 64
# Rust's char::is_whitespace (Unicode White_Space), which inferno trims; Python's str.strip()
# would also take \x1c-\x1f.
WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


@dataclass(frozen=True)
class FoldOptions:
    """inferno-collapse-perf's options that cutaway uses: ``--kernel`` (``_[k]`` after kernel
    frames) and ``--jit`` (``_[j]`` after JIT frames); ``--all`` is both. ``event`` folds only
    that event type (None: the first one seen)."""

    annotate_kernel: bool = False
    annotate_jit: bool = False
    event: str | None = None


@dataclass(frozen=True)
class EventHeader:
    """An event line of perf script: ``comm tid [cpu] time: [period] event: [...]``."""

    comm: str
    pid: str  # "?" when perf printed only the tid
    tid: str
    after: str  # the rest of the line, after the tid and one space
    event: str | None  # inferno's reading of the event name (``sched`` for a tracepoint)
    period: int | None
    inline_frame: str | None  # a one-frame stack written on the event line itself


class _SlowPathNeeded(Exception):
    """The fast path met input only the line-by-line state machine folds exactly."""


def parse_event_line(line: str) -> EventHeader | None:
    """An event line's parts, or None for a line that is not one (inferno's "weird event
    line")."""
    match = _TID_WORD.search(line)
    if match is None:
        return None
    word = match[1]
    slash = word.rfind("/")
    pid, tid = (word[:slash], word[slash + 1 :]) if slash >= 0 else ("?", word)
    comm = line[: match.start() - 1].strip(WHITESPACE)
    after = line[match.end() :]
    parts = after.split(":", 2)
    event = None
    period = None
    if len(parts) > 1:
        words = parts[1].rsplit(" ", 1)
        event = words[-1]
        if len(words) > 1:
            # Rust's u64 parse: the last space-separated word before the event, digits only.
            candidate = words[0].rsplit(" ", 1)[-1]
            if _PERIOD.fullmatch(candidate) and int(candidate) < _U64_LIMIT:
                period = int(candidate)
    inline = None
    if len(parts) > 2:
        post = parts[2]
        cut = min((i for i in (post.find(":"), post.find(" ")) if i >= 0), default=-1)
        post = post[cut + 1 :].strip(WHITESPACE)
        inline = post or None
    return EventHeader(comm, pid, tid, after, event, period, inline)


def is_kernel_module(module: str) -> bool:
    if module == "[unknown]":
        return False
    if module.startswith("[") or module.endswith(".ko"):
        return True
    at = module.rfind("vmlinux")
    return at >= 0 and _VMLINUX_SUFFIX.fullmatch(module, at + 7) is not None


def _is_jit_module(module: str) -> bool:
    return (module.startswith("/tmp/perf-") and module.endswith(".map")) or (
        "/jitted-" in module and module.endswith(".so")
    )


def demangle_rust_leftovers(symbol: str) -> str:
    """A Rust symbol perf left half-demangled (``..`` for ``::``, ``$LT$`` for ``<``, a
    trailing hash), finished as inferno does; any other symbol unchanged."""
    if len(symbol) < 17 or not _RUST_HASH.fullmatch(symbol, len(symbol) - 17):
        return symbol
    rest = symbol[:-17]
    if rest.endswith("::"):
        rest = rest[:-2]
    if rest.startswith("_$"):
        rest = rest[1:]
    out: list[str] = []
    while rest:
        if rest[0] == ".":
            if rest[1:2] == ".":
                out.append("::")
                rest = rest[2:]
            else:
                out.append(".")
                rest = rest[1:]
        elif rest[0] == "$":
            for escape, plain in _RUST_ESCAPES:
                if rest.startswith(escape):
                    out.append(plain)
                    rest = rest[len(escape) :]
                    break
            else:
                out.append(rest)
                break
        else:
            ends = [i for i in (rest.find("$"), rest.find(".")) if i >= 0]
            cut = min(ends) if ends else len(rest)
            out.append(rest[:cut])
            rest = rest[cut:]
    return "".join(out)


def tidy_function(name: str) -> str:
    """``;`` becomes ``:``, and a top-level argument list goes, except Go's ``.(*T)`` and C++'s
    ``(anonymous namespace)`` (inferno's tidy_generic)."""
    name = name.replace(";", ":")
    depth = 0
    last_dot = -1
    for index, char in enumerate(name):
        if char in "<{[":
            depth += 1
        elif char in ">}])":
            depth -= 1
        elif char == "(":
            if depth == 0:
                go_method = last_dot == index
                if not go_method and not name.startswith("(anonymous namespace)", index):
                    return name[:index]
            depth += 1
        elif char == ".":
            last_dot = index + 1
    return name


def fold_stack_line(line: str, java: bool, options: FoldOptions) -> tuple[str, ...] | None:
    """One stack line (``  ip symbol+off (module)``) as its frames, caller first (one, or more
    for Java's inlined ``a->b``); () for a line folding skips; None for a line that is not a
    stack line."""
    _pc, space, rest = line.lstrip(WHITESPACE).partition(" ")
    if not space:
        return None
    rawfunc, space, module = rest.rpartition(" ")
    if not space or not (module.startswith("(") and module.endswith(")")) or len(module) < 2:
        return None
    module = module[1:-1]
    rawfunc = rawfunc.strip(WHITESPACE) or " "
    offset = rawfunc.rfind("+0x")
    if offset >= 0 and _HEX.fullmatch(rawfunc, offset + 3):
        rawfunc = rawfunc[:offset]
    if rawfunc.startswith("("):
        return ()
    rawfunc = demangle_rust_leftovers(rawfunc)
    frames: list[str] = []
    for part in rawfunc.split("->"):
        if part == "[unknown]" and module != "[unknown]":
            part = f"[{module[module.rfind('/') + 1 :]}]"
        func = tidy_function(part)
        if java and func.startswith("L") and "/" in func:
            func = func[1:]
        if frames:
            if "_[i]" not in func:
                func += "_[i]"
        elif options.annotate_kernel and is_kernel_module(module):
            func += "_[k]"
        elif options.annotate_jit and _is_jit_module(module) and "_[j]" not in func:
            func += "_[j]"
        frames.append(func)
    return tuple(frames)


class Folder:
    """Folds perf script text into ``{stack: weight}``; keeps its caches across calls, so
    folding many runs of one program parses each distinct stack once."""

    def __init__(self, options: FoldOptions = FoldOptions()) -> None:
        self.options = options
        self.event = options.event
        self._lines: dict[tuple[bool, str], tuple[str, ...] | None] = {}
        self._stacks: dict[tuple[bool, str], str | None] = {}

    def frames_of_line(self, line: str, java: bool) -> tuple[str, ...] | None:
        key = (java, line)
        found = self._lines.get(key, ())
        if found == ():
            found = self._lines[key] = fold_stack_line(line, java, self.options)
        return found

    def stack_text(self, lines: Iterable[str], java: bool) -> str | None:
        """The frames of a stack's lines (leaf first, as perf writes them) joined root first,
        or None when no line gives a frame."""
        groups: list[tuple[str, ...]] = []
        for line in lines:
            frames = self.frames_of_line(line, java)
            if frames:
                groups.append(frames)
        if not groups:
            return None
        return ";".join(frame for group in reversed(groups) for frame in group)

    def cached_stack(self, stack: str, java: bool) -> str | None:
        """The folded frames of one event's stack text (its lines after the header)."""
        key = (java, stack)
        try:
            return self._stacks[key]
        except KeyError:
            lines = [line.rstrip(WHITESPACE) for line in stack.split("\n")]
            folded = self._stacks[key] = self.stack_text([x for x in lines if x], java)
            return folded

    def fold(self, text: str) -> dict[str, int]:
        """Every stack of ``text`` with its summed weight (unsorted; see :func:`folded_text`)."""
        if not _unusual(text):
            event = self.event
            try:
                counts = self._fold_fast(text)
                return counts
            except _SlowPathNeeded:
                self.event = event
        return fold_lines(text.split("\n"), self)

    def _fold_fast(self, text: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        get = counts.get
        for block in text.split("\n\n"):
            block = block.lstrip("\n")
            if not block:
                continue
            newline = block.find("\n")
            header_line = block if newline < 0 else block[:newline]
            header = parse_event_line(header_line.rstrip(WHITESPACE))
            if header is None or header.inline_frame is not None:
                raise _SlowPathNeeded
            if header.event is not None:
                if self.event is None:
                    self.event = header.event
                elif header.event != self.event:
                    continue
            if newline < 0:
                continue
            name = header.comm.replace(" ", "_")
            stack = self.cached_stack(block[newline + 1 :], name.startswith("java"))
            if stack is not None:
                key = f"{name};{stack}"
                counts[key] = get(key, 0) + (1 if header.period is None else header.period)
        return counts


def _unusual(text: str) -> bool:
    """Whether ``text`` has what only :func:`fold_lines` folds exactly."""
    if text.startswith("#") or "\n#" in text:
        return True
    first = text.split("\n", 1)[0]
    return (bool(first) and not first.strip(WHITESPACE)) or _BLANKISH_LINE.search(text) is not None


def fold_lines(lines: Iterable[str], folder: Folder | None = None) -> dict[str, int]:
    """The line-by-line state machine, inferno's exactly: comments skipped anywhere, a blank
    (or whitespace-only) line ends an event, a line after an unreadable event line is read as
    an event line."""
    folder = folder or Folder()
    counts: dict[str, int] = {}
    in_event = False
    skipping = False
    name = ""
    period: int | None = None
    stack: list[tuple[str, ...]] = []

    def emit() -> None:
        nonlocal in_event, skipping, period
        if stack:
            key = ";".join([name, *(frame for group in reversed(stack) for frame in group)])
            counts[key] = counts.get(key, 0) + (1 if period is None else period)
        in_event = skipping = False
        period = None
        stack.clear()

    def on_stack_line(line: str) -> None:
        if not skipping:
            frames = folder.frames_of_line(line, name.startswith("java"))
            if frames:
                stack.append(frames)

    for raw in lines:
        if raw.startswith("#"):
            continue
        line = raw.rstrip(WHITESPACE)
        if not line:
            emit()
        elif in_event:
            on_stack_line(line)
        else:
            in_event = True
            header = parse_event_line(line)
            if header is None:
                in_event = False
                continue
            if header.event is not None:
                period = header.period
                if folder.event is None:
                    folder.event = header.event
                elif header.event != folder.event:
                    skipping = True
                    continue
            name = header.comm.replace(" ", "_")
            if header.inline_frame is not None:
                on_stack_line(header.inline_frame)
                in_event = False
                if stack:
                    emit()
    emit()
    return counts


def folded_text(counts: dict[str, int]) -> str:
    """The FlameGraph text format: ``stack weight`` lines, sorted as inferno sorts them (by
    their UTF-8 bytes, which is code point order)."""
    return "".join(f"{stack} {counts[stack]}\n" for stack in sorted(counts))


def iter_events(text: str) -> Iterator[tuple[str, str]]:
    """(header line, stack text) of each event of a perf script output that the fast path can
    read; used by the capture, which reads several event types from one output."""
    for block in text.split("\n\n"):
        block = block.lstrip("\n")
        if not block or block.startswith("#"):
            continue
        newline = block.find("\n")
        if newline < 0:
            yield block.rstrip(WHITESPACE), ""
        else:
            yield block[:newline].rstrip(WHITESPACE), block[newline + 1 :]
