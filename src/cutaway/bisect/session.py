"""One bisection, from GOOD and BAD to the first bad commit.

1. GOOD and BAD are built, each in a worktree of its own, and compared first, within one
   budget and without re-runs: BAD must be worse than GOOD (the ratio's interval wholly above
   1, or below it for a metric where more is better); its ratio R is the step to find. When it
   is not (the interval reaches 1 when the budget is spent, or lies wholly short of
   ``threshold`` when one is given, at any look), the bisection stops there: BAD is not worse
   than GOOD, and that interval says by how much it could be.
2. Each commit tested is built in a new worktree and compared with GOOD (whose worktree stays)
   in paired, interleaved rounds, with the gate's adaptive stopping (cutaway.gate.decision): it
   is bad when its interval lies wholly beyond the midpoint between GOOD and BAD (sqrt(R) on
   the ratio scale, or ``threshold``), good when wholly short of it. A single step of R puts
   every commit at 1 or at R, equally far from the midpoint, so each test needs the same
   precision whichever side the commit is on.
3. A test that is still inconclusive when its budget is spent is run again with twice the
   budget, up to ``retries`` times, and the bisection stops there, unsettled, rather than guess.
4. A commit whose build fails (or whose workload cannot run) is skipped, as `git bisect skip`
   does; the search then tests the next nearest the middle (cutaway.bisect.search).

Every worktree is removed at the end, after an error or Ctrl-C too. Every experiment is stored,
labelled with its commit.

Its length: the steps above share one budget and one record of the commits tested, kept in one
module as one procedure."""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from cutaway import events, interrupts
from cutaway.bisect.git import BisectInputError, Repository
from cutaway.bisect.search import Search
from cutaway.gate.decision import (
    GateResult,
    GateVerdict,
    Judge,
    decide,
    evaluate,
    overall,
    plan,
    settled_when,
)
from cutaway.gate.rules import GateRule, default_metric
from cutaway.model import (
    HIGHER_IS_BETTER,
    ProbeSpec,
    Spec,
    Variant,
)
from cutaway.probes.core import known_metrics
from cutaway.report.units import format_change, format_change_interval
from cutaway.runner.captured import Captured
from cutaway.runner.errors import RunnerError
from cutaway.runner.hooks import TIMED_OUT, run_in_group
from cutaway.runner.runner import run_experiment
from cutaway.spec.probes import read_probe_option
from cutaway.store import Store

BAD, GOOD, SKIPPED, UNSETTLED = "bad", "good", "skipped", "unsettled"
NOT_WORSE = "not worse"  # BAD, measured against GOOD first, when it is not worse
# Rounds of the profiled experiment that says where the first bad commit's difference went.
EXPLAIN_ROUNDS = 10
# Build output kept for the message when a build fails.
BUILD_TAIL_CHARS = 2_000
BUILD_TAIL_BYTES = 4 * BUILD_TAIL_CHARS  # enough for that many characters of UTF-8


@dataclass(frozen=True)
class BisectSettings:
    good: str
    bad: str
    workload: str | tuple[str, ...]  # shell code when ``shell``, else an argument vector
    build: str | None = None  # shell code run in each commit's worktree before measuring
    shell: bool = False
    metric: str = "wall"
    threshold: float | None = None  # None: midway between GOOD and BAD
    instructions: bool = False
    rounds: int = 5  # planned rounds of each experiment, before adaptive ones
    max_rounds: int = 200  # each experiment's budget, doubled for each re-run
    max_time_seconds: float | None = None  # each experiment's time budget, doubled likewise
    retries: int = 2  # re-runs of a test that is still inconclusive
    build_timeout_seconds: float = 1_800.0
    timeout_seconds: float | None = None
    seed: int = 0
    # Once the first bad commit is found, profile it against its parent to say where the
    # difference went (cutaway.gate.where): EXPLAIN_ROUNDS rounds with the profile probe.
    explain: bool = True


@dataclass(frozen=True)
class Tested:
    """One commit tested against GOOD (or skipped)."""

    commit: str
    subject: str
    verdict: str  # BAD, GOOD, SKIPPED, UNSETTLED, or NOT_WORSE (BAD's first test)
    ratio: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    rounds: int = 0
    experiments: tuple[int, ...] = ()
    seconds: float = 0.0
    message: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "commit": self.commit,
            "subject": self.subject,
            "verdict": self.verdict,
            "ratio": _finite(self.ratio),
            "ci_low": _finite(self.ci_low),
            "ci_high": _finite(self.ci_high),
            "rounds": self.rounds,
            "experiments": list(self.experiments),
            "seconds": round(self.seconds, 3),
            "message": self.message,
        }


@dataclass
class BisectResult:
    """``status``: "found" (``first_bad``), "skipped" (the first bad commit is one of
    ``candidates``, the others skipped), "unsettled" (a test stayed inconclusive: the first
    bad commit is one of ``candidates``), or "no-regression" (BAD is not worse than GOOD)."""

    good: str
    bad: str
    metric: str
    commits: int  # after GOOD up to BAD
    status: str = "unsettled"
    threshold: float = math.nan
    first_bad: str | None = None
    candidates: tuple[str, ...] = ()
    tested: list[Tested] = field(default_factory=list)
    seconds: float = 0.0
    # The profiled experiment of the first bad commit against its parent (None: not run),
    # or why it could not be run.
    where_experiment: int | None = None
    where_note: str = ""

    @property
    def experiments(self) -> int:
        return sum(len(t.experiments) for t in self.tested)

    @property
    def rounds(self) -> int:
        return sum(t.rounds for t in self.tested)

    def verdict_of(self, commit: str) -> Tested | None:
        """The last test of ``commit`` that measured it (the initial test, for BAD)."""
        measured = [t for t in self.tested if t.commit == commit and t.verdict in (BAD, GOOD)]
        return measured[-1] if measured else None

    def bad_not_worse(self) -> Tested | None:
        """BAD's first test against GOOD when it found BAD not worse (status "no-regression")."""
        return next((t for t in self.tested if t.verdict == NOT_WORSE), None)

    def to_dict(self) -> dict[str, object]:
        # The ratio shown: the first bad commit's, or BAD's when it is not worse than GOOD.
        first = self.verdict_of(self.first_bad) if self.first_bad else self.bad_not_worse()
        return {
            "format": "cutaway-bisect",
            "version": 1,
            "status": self.status,
            "good": self.good,
            "bad": self.bad,
            "first_bad": self.first_bad,
            "candidates": list(self.candidates),
            "metric": self.metric,
            "threshold": _finite(self.threshold),
            "ratio": _finite(first.ratio) if first else None,
            "ci_low": _finite(first.ci_low) if first else None,
            "ci_high": _finite(first.ci_high) if first else None,
            "commits": self.commits,
            "experiments": self.experiments,
            "rounds": self.rounds,
            "seconds": round(self.seconds, 3),
            "tested": [t.to_dict() for t in self.tested],
            "where_experiment": self.where_experiment,
        }


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


class Bisection:
    """Use :func:`run_bisect`."""

    def __init__(
        self,
        repository: Repository,
        settings: BisectSettings,
        store: Store,
        environment: Callable[[], dict[str, object]],
        notify: Callable[[str], None],
        listeners: Iterable[events.Listener],
    ) -> None:
        self.repository = repository
        self.settings = settings
        self.store = store
        self.environment = environment
        self.notify = notify
        self.listeners = tuple(listeners)
        self.worktrees: list[str] = []
        self.base = tempfile.mkdtemp(prefix="cutaway-bisect-")

    # -- worktrees and builds ------------------------------------------------------------------

    def checkout(self, commit: str) -> str:
        directory = os.path.join(self.base, commit[:12])
        self.worktrees.append(directory)  # before git makes it: a half-made one goes too
        self.repository.add_worktree(commit, directory)
        return directory

    def release(self, directory: str) -> None:
        self.repository.remove_worktree(directory)
        shutil.rmtree(directory, ignore_errors=True)
        if directory in self.worktrees:
            self.worktrees.remove(directory)

    @interrupts.holding
    def close(self) -> None:
        """Remove every worktree. Interrupts are held (a second Ctrl-C must not leave one
        behind) and raised once they are gone."""
        for directory in list(self.worktrees):
            self.release(directory)
        shutil.rmtree(self.base, ignore_errors=True)
        interrupts.check()

    def build(self, commit: str, directory: str) -> str | None:
        """Run the build in the commit's worktree; None when it worked, else why not."""
        if self.settings.build is None:
            return None
        self.notify(f"building {commit[:12]}")
        # In a process group of its own, stopped whole at its time limit or an interrupt: a
        # compiler it started must not go on in a worktree that is about to be removed.
        output = Captured(tail_bytes=BUILD_TAIL_BYTES)
        exit_code = run_in_group(
            ["/bin/sh", "-c", self.settings.build],
            output,
            cwd=directory,
            timeout_seconds=self.settings.build_timeout_seconds,
        )
        interrupts.check()  # one that stopped the build
        text = output.tail_text().strip()[-BUILD_TAIL_CHARS:]
        if exit_code == TIMED_OUT:
            return f"the build timed out after {self.settings.build_timeout_seconds:g} s"
        if exit_code == 0:
            return None
        how = f"exit status {exit_code}" if exit_code > 0 else "a signal"
        return f"the build failed ({how})" + (f":\n{text}" if text else "")

    # -- experiments ---------------------------------------------------------------------------

    def spec(self, commit: str, directory: str, good_directory: str, scale: int) -> Spec:
        return commit_spec(self.settings, commit, directory, good_directory, scale)

    def test(
        self,
        commit: str,
        directory: str,
        good_directory: str,
        threshold: float,
        *,
        retries: int | None = None,
        judge: Judge = overall,
    ) -> Tested:
        """Compare ``commit`` with GOOD, again with twice the budget while inconclusive (up to
        ``retries`` times, the settings' unless given); ``judge`` reads the verdict."""
        started = time.monotonic()
        rule = GateRule(self.settings.metric, threshold)
        subject = self.repository.subject(commit)
        experiments: list[int] = []
        rounds = 0
        result: GateResult | None = None
        verdict = GateVerdict.INCONCLUSIVE
        retries = self.settings.retries if retries is None else retries
        for attempt in range(retries + 1):
            scale = 2**attempt
            spec = self.spec(commit, directory, good_directory, scale)
            gate_plan = plan(spec, [rule], self.settings.max_rounds * scale)
            settled = settled_when(spec, [rule], gate_plan, judge)
            try:
                outcome = run_experiment(
                    spec,
                    self.store,
                    environment=self.environment(),
                    listeners=self.listeners,
                    label=commit,
                    settled=settled,
                )
            except RunnerError as error:
                message = f"the workload cannot run: {error}"
                return Tested(
                    commit,
                    subject,
                    SKIPPED,
                    experiments=tuple(experiments),
                    seconds=time.monotonic() - started,
                    message=message,
                )
            experiments.append(outcome.experiment_id)
            if outcome.reason == "interrupted":
                raise KeyboardInterrupt
            results = evaluate(
                self.store, outcome.experiment_id, spec, [rule], gate_plan.confidence
            )
            result = results[0] if results else None
            verdict = judge(results) if results else GateVerdict.INCONCLUSIVE
            rounds += result.n_pairs if result else 0
            if outcome.failed_runs or outcome.reason == "no-pairs":
                message = f"runs of the workload failed (experiment #{outcome.experiment_id})"
                return Tested(
                    commit,
                    subject,
                    SKIPPED,
                    experiments=tuple(experiments),
                    rounds=rounds,
                    seconds=time.monotonic() - started,
                    message=message,
                )
            if result is not None and verdict is not GateVerdict.INCONCLUSIVE:
                break
            if attempt < retries:
                self.notify(
                    f"{commit[:12]}: inconclusive after {result.n_pairs if result else 0} "
                    "rounds; measuring again with twice the budget"
                )
        assert result is not None
        return Tested(
            commit,
            subject,
            {GateVerdict.FAIL: BAD, GateVerdict.PASS: GOOD}.get(verdict, UNSETTLED),
            result.ratio,
            result.ci_low,
            result.ci_high,
            rounds,
            tuple(experiments),
            time.monotonic() - started,
        )


def worse_judge(threshold: float | None) -> Judge:
    """How BAD's first test against GOOD is read: fail (worse) once the interval lies wholly
    beyond 1; pass (not worse) once it lies wholly short of ``1 + threshold`` (of 1 without a
    threshold: BAD better than GOOD); inconclusive otherwise. Worse is asked first: a step
    smaller than the threshold, but certain, is still a step to find."""

    def judge(results: Sequence[GateResult]) -> GateVerdict:
        verdicts = [decide(result.ci_low, result.ci_high, 0.0, result.better) for result in results]
        if GateVerdict.FAIL in verdicts:
            return GateVerdict.FAIL
        tolerated = [
            decide(result.ci_low, result.ci_high, threshold or 0.0, result.better)
            for result in results
        ]
        if tolerated and all(verdict is GateVerdict.PASS for verdict in tolerated):
            return GateVerdict.PASS
        return GateVerdict.INCONCLUSIVE

    return judge


def midway_threshold(ratio: float, better: str) -> float:
    """The threshold halfway (on the log scale) between GOOD (1) and BAD (``ratio``)."""
    if better == HIGHER_IS_BETTER:
        return 1.0 / math.sqrt(ratio) - 1.0
    return math.sqrt(ratio) - 1.0


def run_bisect(
    repository: Repository,
    settings: BisectSettings,
    store: Store,
    *,
    environment: Callable[[], dict[str, object]],
    notify: Callable[[str], None] = lambda message: None,
    listeners: Iterable[events.Listener] = (),
) -> BisectResult:
    """Bisect from ``settings.good`` to ``settings.bad``. Raises BisectInputError for bad
    input (unknown commits, GOOD not an ancestor of BAD, GOOD's or BAD's build failing),
    KeyboardInterrupt when interrupted; the worktrees are removed either way."""
    started = time.monotonic()
    good = repository.resolve(settings.good, "GOOD")
    bad = repository.resolve(settings.bad, "BAD")
    if good == bad:
        raise BisectInputError("GOOD and BAD are the same commit: nothing to bisect")
    if not repository.is_ancestor(good, bad):
        raise BisectInputError(
            f"GOOD {settings.good!r} is not an ancestor of BAD {settings.bad!r}: a bisection "
            "searches the commits that lead from GOOD to BAD"
        )
    commits = [good, *repository.commits_after(good, bad)]
    if commits[-1] != bad:  # BAD not on GOOD's first-parent line: test what git lists
        raise BisectInputError(
            f"BAD {settings.bad!r} does not descend from GOOD along first parents"
        )
    settings = _resolved(settings, good, bad)
    result = BisectResult(good, bad, settings.metric, len(commits) - 1)
    bisection = Bisection(repository, settings, store, environment, notify, listeners)
    try:
        _bisect(bisection, commits, result)
    finally:
        bisection.close()
        result.seconds = time.monotonic() - started
    return result


def commit_spec(
    settings: BisectSettings, commit: str, directory: str, good_directory: str, scale: int
) -> Spec:
    """The experiment that tests ``commit`` (built in ``directory``) against GOOD (built in
    ``good_directory``), its time budget ``scale`` times the settings'."""
    good_name = f"{settings.good[:12]} (good)"
    variants = tuple(
        Variant(name=name, command=settings.workload, shell=settings.shell, cwd=where)
        for name, where in ((good_name, good_directory), (commit[:12], directory))
    )
    budget = settings.max_time_seconds
    return Spec(
        name=f"bisect: {commit[:12]} against {settings.good[:12]}",
        variants=variants,
        baseline=good_name,
        rounds=settings.rounds,
        timeout_seconds=settings.timeout_seconds,
        max_time_seconds=None if budget is None else budget * scale,
        seed=settings.seed,
        probes=read_probe_option("--instructions", settings.instructions, ProbeSpec()),
    )


def judged_metric(settings: BisectSettings) -> str:
    """The metric a bisection with ``settings`` judges: the gate's default for its tests'
    experiments (a deterministic one, the instructions probe's when ``instructions`` counts
    them, else wall time)."""
    return default_metric(commit_spec(settings, settings.bad, ".", ".", 1))


def _resolved(settings: BisectSettings, good: str, bad: str) -> BisectSettings:
    return dataclasses.replace(settings, good=good, bad=bad)


def _bisect(bisection: Bisection, commits: list[str], result: BisectResult) -> None:
    good, bad = commits[0], commits[-1]
    notify = bisection.notify
    good_directory = bisection.checkout(good)
    problem = bisection.build(good, good_directory)
    if problem is not None:
        raise BisectInputError(f"GOOD {good[:12]} cannot be measured: {problem}")
    bad_directory = bisection.checkout(bad)
    problem = bisection.build(bad, bad_directory)
    if problem is not None:
        raise BisectInputError(f"BAD {bad[:12]} cannot be measured: {problem}")
    notify(f"measuring BAD {bad[:12]} against GOOD {good[:12]}")
    # One budget, no re-runs: a BAD that is not worse is the answer, not a test to repeat.
    first = bisection.test(
        bad,
        bad_directory,
        good_directory,
        0.0,
        retries=0,
        judge=worse_judge(bisection.settings.threshold),
    )
    bisection.release(bad_directory)
    if first.verdict == SKIPPED:
        result.tested.append(first)
        raise BisectInputError(f"BAD {bad[:12]} cannot be measured: {first.message}")
    if first.verdict != BAD:
        result.tested.append(dataclasses.replace(first, verdict=NOT_WORSE))
        notify(_tested_line(result.tested[-1]))
        result.status = "no-regression"
        return
    result.tested.append(first)
    better = _better(bisection.settings)
    threshold = bisection.settings.threshold
    if threshold is None:
        threshold = midway_threshold(first.ratio, better)
    result.threshold = threshold
    search = Search(len(commits))
    notify(
        f"BAD is {_change(first.ratio)}; a commit is bad beyond {_change(1 + threshold)}; "
        f"{len(commits) - 1} commits, about {search.steps_left()} more tests"
    )
    while (index := search.next()) is not None:
        commit = commits[index]
        directory = bisection.checkout(commit)
        try:
            problem = bisection.build(commit, directory)
            if problem is None:
                tested = bisection.test(commit, directory, good_directory, threshold)
            else:
                tested = Tested(
                    commit, bisection.repository.subject(commit), SKIPPED, message=problem
                )
        finally:
            bisection.release(directory)
        result.tested.append(tested)
        notify(_tested_line(tested))
        if tested.verdict == BAD:
            search.mark_bad(index)
        elif tested.verdict == GOOD:
            search.mark_good(index)
        elif tested.verdict == SKIPPED:
            search.skip(index)
        else:
            result.status = UNSETTLED
            result.candidates = tuple(commits[search.good + 1 : search.bad + 1])
            return
    result.candidates = tuple(commits[i] for i in search.candidates())
    if len(result.candidates) == 1:
        result.status = "found"
        result.first_bad = result.candidates[0]
        if bisection.settings.explain:
            _explain(bisection, commits, result, good_directory)
    else:
        result.status = SKIPPED


def _explain(
    bisection: Bisection, commits: list[str], result: BisectResult, good_directory: str
) -> None:
    """Profile the first bad commit against its parent, to say where the difference went."""
    assert result.first_bad is not None
    first_bad = result.first_bad
    parent = commits[commits.index(first_bad) - 1]
    bisection.notify(
        f"profiling {first_bad[:12]} against its parent {parent[:12]} ({EXPLAIN_ROUNDS} rounds) "
        "to say where the difference went"
    )
    directories: list[str] = []
    try:
        parent_directory = good_directory
        if parent != commits[0]:
            parent_directory = bisection.checkout(parent)
            directories.append(parent_directory)
        bad_directory = bisection.checkout(first_bad)
        directories.append(bad_directory)
        for commit, directory in ((parent, parent_directory), (first_bad, bad_directory)):
            problem = bisection.build(commit, directory) if directory != good_directory else None
            if problem is not None:
                result.where_note = f"{commit[:12]} could not be built again: {problem}"
                return
        settings = bisection.settings
        parent_name = f"{parent[:12]} (parent)"
        spec = Spec(
            name=f"bisect: where {first_bad[:12]} went",
            variants=tuple(
                Variant(name=name, command=settings.workload, shell=settings.shell, cwd=where)
                for name, where in (
                    (parent_name, parent_directory),
                    (first_bad[:12], bad_directory),
                )
            ),
            baseline=parent_name,
            rounds=EXPLAIN_ROUNDS,
            warmup_rounds=0,
            timeout_seconds=settings.timeout_seconds,
            max_time_seconds=settings.max_time_seconds,
            seed=settings.seed,
            probes=read_probe_option("--profile", {}, ProbeSpec()),  # the profile's defaults
        )
        try:
            outcome = run_experiment(
                spec,
                bisection.store,
                environment=bisection.environment(),
                listeners=bisection.listeners,
                label=first_bad,
            )
        except RunnerError as error:
            result.where_note = f"the profile could not be taken here: {error}"
            return
        if outcome.reason == "interrupted":
            raise KeyboardInterrupt
        result.where_experiment = outcome.experiment_id
    finally:
        for directory in directories:
            bisection.release(directory)


def _better(settings: BisectSettings) -> str:
    return known_metrics()[settings.metric].better


def _change(ratio: float) -> str:
    return format_change(ratio)


def _tested_line(tested: Tested) -> str:
    if tested.verdict == SKIPPED:
        return f"{tested.commit[:12]} skipped: {tested.message}"
    return (
        f"{tested.commit[:12]} {tested.verdict}: {_change(tested.ratio)} "
        f"{format_change_interval(tested.ci_low, tested.ci_high)} in {tested.rounds} rounds "
        f"({tested.seconds:.1f} s)"
    )
