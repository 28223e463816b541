"""The ``profile`` probe: stack samples by Linux perf, on-CPU and off-CPU, in runs of its own.

Each profiled run is started as ``perf record ... -- COMMAND``:

- on-CPU: the ``cpu-clock`` software event at the chosen frequency (hardware counters are not
  needed, and are missing on many virtual machines), with call graphs (frame pointers, or DWARF
  unwinding of a copy of the user stack), user and kernel frames;
- off-CPU: ``sched:sched_switch`` at every switch (period 1) with its call graph, which is the
  stack where a thread blocked or was preempted, and the moment it was switched back in: from
  ``--switch-events`` (PERF_RECORD_SWITCH IN of the profiled threads) or, system-wide, from
  the next ``sched_switch`` whose ``next_pid`` is that thread. Each interval's length, in
  nanoseconds, is the weight of its stack, so on-CPU (weighted by the cpu-clock period, also
  nanoseconds) and off-CPU add up to the threads' wall time.

``check`` finds what works here, one step at a time: perf missing or not allowed (exit 2,
with the reason); kernel symbols unreadable -> user frames only; DWARF unwinding failing or
too costly -> frame pointers; the scheduler tracepoint unavailable -> on-CPU only. What was
used is the probe's description, stored and shown in every report.

Its length: the probe's one life cycle, from finding what perf may do here (a trial record per
capability) through each run's record to reading its ``perf script`` output back into stacks,
with the sampling cost it reports, is one class and the readers it calls; split, each part
would import the others' private details."""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cutaway.model import RunData
from cutaway.probes.base import Attachment, Launch, Overhead, ProbeError, process_cost
from cutaway.probes.profile import records
from cutaway.probes.profile.fold import Folder, FoldOptions, parse_event_line
from cutaway.probes.profile.records import NANOSECONDS, OFF_CPU, ON_CPU, Profile
from cutaway.probes.profile.settings import ProfileSpec
from cutaway.probes.stacks import has_symbol_table as has_symbol_table
from cutaway.processes import owned_directory

PERF_PACKAGE = "linux-perf"
SAMPLE_EVENT = "cpu-clock"
# DWARF unwinding is dropped when it costs more than this fraction of a CPU-bound command's
# wall time at the chosen frequency (frame pointers cost a small fraction of that).
DWARF_COST_LIMIT = 0.10
FORCED_DWARF = "dwarf!"  # the call_graph value that keeps DWARF whatever it costs
COST_PAIRS = 5  # pairs of runs, sampled and not, that measure the per-sample cost
# A CPU-bound command that reports its own CPU time (the interrupts and unwinding of sampling
# are charged to the sampled process): this Python, spinning about 0.3 s.
SPIN_PROGRAM = (
    "import time\nstart = time.process_time()\nx = 0\n"
    "for i in range(3_000_000):\n    x += i * i\n"
    "print(time.process_time() - start)"
)
# What follows the tid on an event line: "[cpu]  seconds.fraction: ..."
_WHEN = r"\s*(?:\[\d+\]\s+)?(?P<seconds>\d+)\.(?P<fraction>\d+):\s+"
_SWITCH_RECORD = re.compile(_WHEN + r"PERF_RECORD_SWITCH(?:_CPU_WIDE)? (?P<direction>IN|OUT)")
# Anchored at the end: a command name (prev_comm, next_comm) may hold anything.
_SCHED_SWITCH = re.compile(
    _WHEN + r"sched:sched_switch: .*prev_pid=(?P<prev>-?\d+) prev_prio=\S+ "
    r"prev_state=(?P<state>\S+) ==> next_comm=.* next_pid=(?P<next>-?\d+) next_prio=\S+$"
)


@dataclass(frozen=True)
class SamplingCost:
    """What sampling a CPU-bound program adds to its own CPU time, from pairs of runs (one
    sampled, one not, back to back, in alternating order).

    Resolved when every pair shows an added cost: were the true cost zero, each pair's sign
    would be a coin's, and all of COST_PAIRS = 5 positive has a chance of 1 in 32 (a sign
    test at 97 %). The cost is then the pairs' median. Otherwise the cost is below what this
    measurement resolves, and ``bound`` is what can be said: at most the largest pair's
    difference (the median of the true differences is below the largest of five with the same
    97 %), and never less than the run-to-run noise of the runs alone (their standard
    deviation), nor the CPU clock's resolution: a difference smaller than the noise says
    nothing, so a bound below it ("below 0.003 ns") would claim a precision never measured."""

    fraction: float  # of the program's CPU time, the median pair (0 when not resolved)
    per_sample: float  # seconds, the median pair divided by the samples taken
    bound: float  # seconds per sample: the cost is at most this
    resolved: bool
    pairs: int
    samples: float  # per run of the program: its CPU time times the frequency


def sampling_cost(
    differences: Sequence[float], plains: Sequence[float], frequency_hz: int
) -> SamplingCost:
    """SamplingCost from each pair's CPU seconds added (sampled minus alone) and the CPU
    seconds of the runs alone."""
    plain = statistics.median(plains)
    samples = max(1.0, plain * frequency_hz)
    resolved = min(differences) > 0
    added = statistics.median(differences) if resolved else 0.0
    noise = statistics.stdev(plains) if len(plains) > 1 else 0.0
    largest = max(max(differences), noise, time.get_clock_info("process_time").resolution)
    return SamplingCost(
        added / plain if plain > 0 else 0.0,
        added / samples,
        largest / samples,
        resolved,
        len(differences),
        samples,
    )


def short_seconds(seconds: float) -> str:
    """A small duration in a few digits: 84.4 µs, 950 ns."""
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3g} µs"
    return f"{seconds * 1e9:.3g} ns"


def cost_text(cost: SamplingCost) -> str:
    """How the per-sample cost was measured, and its bound when below resolution."""
    how = (
        f"the CPU time sampling adds to a CPU-bound program, {cost.pairs} alternating pairs "
        f"of runs with about {cost.samples:.0f} samples each"
    )
    if cost.resolved:
        return f"per-sample cost measured as {how}"
    return (
        f"per-sample cost below {short_seconds(cost.bound)}: not every pair showed it, "
        f"measured as {how}"
    )


@dataclass(frozen=True)
class Capabilities:
    """What check() found works here, and why anything asked for is not used."""

    kernel: bool
    call_graph: str
    off_cpu: bool
    notes: tuple[str, ...] = ()


def perf_path() -> str | None:
    return shutil.which("perf")


def _paranoid() -> int | None:
    try:
        return int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    except (OSError, ValueError):
        return None


def kernel_symbols_readable() -> bool:
    """Whether /proc/kallsyms shows real addresses to this process (kptr_restrict and
    privileges allow it), which perf needs to name kernel frames."""
    try:
        with open("/proc/kallsyms") as symbols:
            first = symbols.readline().split()
    except OSError:
        return False
    return bool(first) and int(first[0], 16) != 0


def _try_record(perf: str, arguments: Sequence[str], directory: Path) -> str | None:
    """Run ``perf record ARGUMENTS -- true``; None when it works, else perf's complaint."""
    output = directory / "check.data"
    argv = [perf, "record", "-q", "--no-bpf-event", "-o", str(output), *arguments, "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    finally:
        output.unlink(missing_ok=True)
    if done.returncode == 0:
        return None
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return " ".join(lines[:3]) or f"exit status {done.returncode}"


def spin_cpu_seconds(prefix: Sequence[str] = (), repeat: int = 3) -> float:
    """The least CPU time of ``repeat`` runs of SPIN_PROGRAM, behind ``prefix`` (perf record)
    or alone: CPU time, not wall, so that a busy machine changes it little."""
    best = float("inf")
    for _ in range(repeat):
        done = subprocess.run(
            [*prefix, sys.executable, "-c", SPIN_PROGRAM],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        best = min(best, float(done.stdout.split()[-1]))
    return best


class ProfileProbe:
    """Samples the stacks of every profiled run with perf (see the module's docstring)."""

    name = "profile"
    own_runs = True

    def __init__(self, spec: ProfileSpec) -> None:
        if spec.frequency_hz <= 0:
            raise ValueError("the profile frequency must be a positive number of Hz")
        self.spec = spec
        self.perf = perf_path()
        self.directory = owned_directory("cutaway-profile-")
        self.data_path = self.directory / "perf.data"
        self.capabilities = Capabilities(spec.kernel, spec.call_graph.rstrip("!"), spec.off_cpu)
        self.folder = Folder(FoldOptions(annotate_kernel=True, annotate_jit=True))
        self.measured_cost: SamplingCost | None = None  # measured by check()
        self.own_pids: frozenset[str] = frozenset()

    # -- check ---------------------------------------------------------------------------------

    def check(self) -> str:
        if self.perf is None:
            raise ProbeError(
                f"the profile probe needs perf, which is not on PATH "
                f"(Debian: apt-get install {PERF_PACKAGE})"
            )
        base = ["-e", f"{SAMPLE_EVENT}/freq={self.spec.frequency_hz}/", "-g"]
        problem = _try_record(self.perf, base, self.directory)
        if problem is not None:
            raise ProbeError(self._not_allowed(problem))
        self.capabilities = self._find_capabilities()
        self.measured_cost = self._sampling_cost()
        return self.describe()

    def _not_allowed(self, problem: str) -> str:
        paranoid = _paranoid()
        hint = ""
        if paranoid is not None and paranoid > 1 and os.geteuid() != 0:
            hint = (
                f"; kernel.perf_event_paranoid is {paranoid}: run as root, or allow profiling "
                "with `sysctl kernel.perf_event_paranoid=1` (user and kernel frames need <= 1)"
            )
        return f"perf cannot record here: {problem}{hint}"

    def _find_capabilities(self) -> Capabilities:
        assert self.perf is not None
        notes = []
        kernel = self.spec.kernel
        if kernel and not kernel_symbols_readable():
            kernel = False
            notes.append("no kernel symbols (/proc/kallsyms hides addresses): user frames only")
        if kernel and _try_record(self.perf, ["-e", f"{SAMPLE_EVENT}/freq=99/"], self.directory):
            kernel = False
            notes.append("kernel frames not allowed: user frames only")
        call_graph, note = self._unwinder()
        if note:
            notes.append(note)
        off_cpu = self.spec.off_cpu
        if off_cpu:
            problem = _try_record(
                self.perf,
                ["-e", "sched:sched_switch", "--switch-events", "-c", "1"],
                self.directory,
            )
            if problem is not None:
                off_cpu = False
                notes.append(f"no off-CPU time (sched:sched_switch not available: {problem})")
        return Capabilities(kernel, call_graph, off_cpu, tuple(notes))

    def _unwinder(self) -> tuple[str, str | None]:
        """The unwinder to use ("fp" or "dwarf") and why it is not the one asked for, or what
        insisting on DWARF costs. "dwarf!" that perf cannot record stops the experiment."""
        assert self.perf is not None
        wanted = self.spec.call_graph
        if wanted == "fp":
            return "fp", None
        insisted = wanted == FORCED_DWARF
        problem = _try_record(
            self.perf,
            ["-e", f"{SAMPLE_EVENT}/freq=99/", "--call-graph", "dwarf"],
            self.directory,
        )
        if problem is not None:
            if insisted:
                raise ProbeError(
                    f"call_graph = {FORCED_DWARF!r}: perf cannot unwind with DWARF here: {problem}"
                )
            return "fp", f"DWARF unwinding failed ({problem}): frame pointers"
        cost = self._sampling_cost("dwarf").fraction
        measured = (
            f"{cost:.1%} of a CPU-bound program's CPU time at {self.spec.frequency_hz} Hz, "
            f"limit {DWARF_COST_LIMIT:.0%}"
        )
        if cost <= DWARF_COST_LIMIT:
            return "dwarf", None
        if insisted:
            return "dwarf", f"DWARF insisted on ({FORCED_DWARF}) though it costs {measured}"
        return "fp", (
            f"DWARF unwinding too costly ({measured}): frame pointers "
            f"(--profile-call-graph {FORCED_DWARF} keeps DWARF)"
        )

    def describe(self) -> str:
        capabilities = self.capabilities
        frames = "user and kernel frames" if capabilities.kernel else "user frames only"
        unwinding = "DWARF" if capabilities.call_graph == "dwarf" else "frame pointers"
        scope = "the whole system (-a)" if self.spec.system_wide else "the workload's processes"
        what = "on-CPU and off-CPU" if capabilities.off_cpu else "on-CPU only"
        text = (
            f"perf {SAMPLE_EVENT} at {self.spec.frequency_hz} Hz, {what}, {frames}, "
            f"{unwinding}, {scope}; in profiled runs separate from the timed runs"
        )
        notes = list(capabilities.notes)
        if self.measured_cost is not None:
            notes.append(cost_text(self.measured_cost))
        if notes:
            text += " (" + "; ".join(notes) + ")"
        return text

    # -- overhead ------------------------------------------------------------------------------

    def record_arguments(self, call_graph: str | None = None) -> list[str]:
        """perf record's options for one profiled run (without -o and the command)."""
        capabilities = self.capabilities
        modifier = "" if capabilities.kernel else "u"
        event = f"{SAMPLE_EVENT}/freq={self.spec.frequency_hz}/{modifier}"
        arguments = ["record", "-q", "--no-bpf-event", "-e", event]
        graph = call_graph or capabilities.call_graph
        arguments += ["--call-graph", "dwarf" if graph == "dwarf" else "fp"]
        if capabilities.off_cpu:
            # -c 1: every switch (cpu-clock keeps its own frequency term).
            arguments += ["-c", "1", "-e", "sched:sched_switch"]
            if not self.spec.system_wide:
                arguments.append("--switch-events")
        if self.spec.system_wide:
            arguments.append("-a")
        return arguments

    def _sampling_cost(
        self, call_graph: str | None = None, pairs: int = COST_PAIRS
    ) -> SamplingCost:
        """What sampling costs (SamplingCost): a CPU-bound program's own CPU time sampled at
        the chosen frequency against alone, ``pairs`` pairs run back to back in alternating
        order."""
        assert self.perf is not None
        output = str(self.directory / "cost.data")
        record = [self.perf, *self.record_arguments(call_graph), "-o", output, "--"]
        differences, plains = [], []
        try:
            for pair in range(pairs):
                if pair % 2:
                    sampled, plain = spin_cpu_seconds(record, 1), spin_cpu_seconds((), 1)
                else:
                    plain, sampled = spin_cpu_seconds((), 1), spin_cpu_seconds(record, 1)
                differences.append(sampled - plain)
                plains.append(plain)
        finally:
            Path(output).unlink(missing_ok=True)
        return sampling_cost(differences, plains, self.spec.frequency_hz)

    def overhead(self) -> Overhead:
        """Per sample: see _sampling_cost. Per process: perf record around `true` against
        `true` alone, in alternating pairs (starting perf, writing and closing its file),
        which each profiled run pays once; the timed runs pay nothing."""
        assert self.perf is not None
        cost = self.measured_cost or self._sampling_cost()
        true = shutil.which("true") or "/bin/true"
        output = str(self.directory / "cost.data")
        record = [self.perf, *self.record_arguments(), "-o", output, "--", true]
        environment = dict(os.environ)
        try:
            per_process = process_cost(
                Launch(record, environment), Launch([true], environment), pairs=10
            )
        finally:
            Path(output).unlink(missing_ok=True)
        # Below its resolution the cost is no number: the description gives its bound.
        return Overhead(cost.per_sample if cost.resolved else None, per_process)

    def check_program(self, program: str) -> str | None:
        if has_symbol_table(program) is False:
            return (
                f"{program} has no symbol table (stripped): the profile names its own frames "
                f"[{Path(program).name}] only; a build with symbols (or its -dbgsym package) "
                "names its functions"
            )
        return None

    # -- runs ----------------------------------------------------------------------------------

    def before_run(self, environment: Mapping[str, str]) -> Attachment:
        assert self.perf is not None
        self.data_path.unlink(missing_ok=True)
        self.own_pids = own_processes()  # the fork server may be gone by the end of the run
        prefix = (self.perf, *self.record_arguments(), "-o", str(self.data_path), "--")
        return Attachment(argv_prefix=prefix)

    def after_run(self) -> list[RunData]:
        if self.perf is None or not self.data_path.is_file():
            return []
        arguments = [self.perf, "script", "-i", str(self.data_path), "--ns"]
        if self.capabilities.off_cpu and not self.spec.system_wide:
            arguments.append("--show-switch-events")
        own = None
        if self.spec.system_wide:
            arguments += ["-F", SYSTEM_WIDE_FIELDS]
            own = self.own_pids | own_processes()
        done = subprocess.run(arguments, capture_output=True, check=False)
        self.data_path.unlink(missing_ok=True)
        text = done.stdout.decode("utf-8", errors="replace")
        profiles = read_perf_script(text, self.folder, backend=self.describe(), own=own)
        return [
            RunData(records.KIND, profile.what, profile.events, records.encode(profile))
            for profile in profiles
        ]

    def run_metrics(self) -> Mapping[str, float]:
        return {}

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def _time(match: re.Match[str]) -> int:
    """The event's time in nanoseconds, exactly (perf script --ns: seconds.nanoseconds)."""
    return int(match["seconds"]) * 1_000_000_000 + int(match["fraction"].ljust(9, "0")[:9])


# perf script's fields for a system-wide profile: its defaults and the pid (see root_name). With
# any -F, perf (6.1) drops the call chain of tracepoint events unless ip, sym and dso are asked
# for too: every sched_switch would print as one line without its stack.
SYSTEM_WIDE_FIELDS = "+pid,+ip,+sym,+symoff,+dso"
HARNESS_NAMES = ("cutaway", "cw_forkserver")  # the process names of cutaway's own processes
OTHER_SUFFIX = "(other)"  # after the name of another cutaway's process in a system-wide profile


def own_processes() -> frozenset[str]:
    """This cutaway's process and its children (the fork server among them), as perf
    prints pids: what a system-wide profile counts as this experiment's own harness."""
    pids = {str(os.getpid())}
    for children in Path("/proc/self/task").glob("*/children"):
        try:
            pids.update(children.read_text().split())
        except OSError:
            continue
    return frozenset(pids)


def root_name(comm: str, pid: str, own: frozenset[str] | None) -> str:
    """The root frame of a stack: the process name (spaces as ``_``, as folding writes it).
    With ``own`` (a system-wide profile, whose events carry their pid): this cutaway's own
    processes are ``cutaway`` and ``cw_forkserver`` whatever they are called, another
    cutaway's (another experiment on the machine) ``cutaway(other)``, so that the harness's
    row counts this experiment's processes only."""
    name = comm.replace(" ", "_")
    if own is None:
        return name
    if pid == str(os.getpid()):
        return HARNESS_NAMES[0]
    if name in HARNESS_NAMES and pid not in own:
        return name + OTHER_SUFFIX
    return name


def _event_blocks(text: str) -> Iterator[str]:
    """perf script's output cut into blocks of one event each (switch records before it
    included): an event with a stack ends at a blank line, but one printed without a stack has
    no blank line after it, so the line after it (an event or a switch record; frames start
    with a tab) begins a block of its own; else that event would take the next one's stack."""
    for block in text.split("\n\n"):
        lines = block.lstrip("\n").split("\n")
        start = 0
        for index in range(1, len(lines)):
            line = lines[index]
            previous = lines[index - 1]
            if (
                line
                and not line.startswith("\t")
                and previous
                and not previous.startswith("\t")
                and _is_event(previous)
                and parse_event_line(line.rstrip()) is not None
            ):
                yield "\n".join(lines[start:index])
                start = index
        yield "\n".join(lines[start:])


def _is_event(line: str) -> bool:
    """An event line, not a switch record (a record comes before its event, in one block)."""
    header = parse_event_line(line.rstrip())
    return header is not None and _SWITCH_RECORD.match(header.after) is None


def read_perf_script(
    text: str, folder: Folder, backend: str = "", own: frozenset[str] | None = None
) -> list[Profile]:
    """One profiled run's perf script output (``--ns``, ``--show-switch-events`` when
    recorded; ``-F +pid`` when ``own`` is given, see root_name) -> its on-CPU profile and,
    when it has scheduler events, its off-CPU profile."""
    on_cpu: dict[str, int] = {}
    off_cpu: dict[str, int] = {}
    samples = intervals = 0
    switched_out: dict[str, tuple[int, str]] = {}  # tid -> (when, folded stack)
    saw_switches = False

    def switched_in(tid: str, when: int) -> None:
        nonlocal intervals
        out = switched_out.pop(tid, None)
        if out is not None and when >= out[0]:
            off_cpu[out[1]] = off_cpu.get(out[1], 0) + when - out[0]
            intervals += 1

    for block in _event_blocks(text):
        lines = block.lstrip("\n")
        header = None
        # Switch records are single lines, written before the next event without a blank.
        while lines:
            newline = lines.find("\n")
            line, rest = (lines, "") if newline < 0 else (lines[:newline], lines[newline + 1 :])
            header = parse_event_line(line.rstrip())
            record = None if header is None else _SWITCH_RECORD.match(header.after)
            if header is not None and record is None:
                lines = rest
                break
            lines = rest
            if record is not None and header is not None:
                saw_switches = True
                if record["direction"] == "IN":
                    switched_in(header.tid, _time(record))
            header = None
        if header is None:
            continue
        stack_text = lines
        name = root_name(header.comm, header.pid, own)
        switch = _SCHED_SWITCH.match(header.after)
        if switch is not None:
            saw_switches = True
            when = _time(switch)
            switched_in(switch["next"], when)
            if switch["prev"] == "0" or switch["state"].startswith(("X", "Z", "I")):
                continue  # the idle task; a thread that exits; an idle kernel thread
            stack = folder.cached_stack(stack_text, name.startswith("java"))
            folded = name if stack is None else f"{name};{stack}"
            switched_out[switch["prev"]] = (when, folded)
        elif header.event is not None and header.event.split("/")[0] == SAMPLE_EVENT:
            stack = folder.cached_stack(stack_text, name.startswith("java"))
            if stack is None:
                continue
            key = f"{name};{stack}"
            on_cpu[key] = on_cpu.get(key, 0) + (header.period or 0)
            samples += 1
    profiles = [Profile(ON_CPU, NANOSECONDS, on_cpu, samples, backend=backend)]
    if saw_switches:
        profiles.append(Profile(OFF_CPU, NANOSECONDS, off_cpu, intervals, backend=backend))
    return profiles
