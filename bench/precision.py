"""Precision benchmark: does cutaway catch a small change and stay quiet, and unbiased, when there
is none?

Each repetition runs these experiments on the same time budget, interleaved so that every one
sees the same machine conditions (the first one rotating from one repetition to the next):

- cutaway A vs B, where B (``spin (1+c)*N``) does c more CPU work than A (``spin N``; c is
  ``--change``, 1 % by default);
- hyperfine A vs B, read with a Welch t-test on its exported times (unless ``--tools cutaway``);
- cutaway A vs A (any "regressed" or "improved" is a false alarm);
- hyperfine A vs A.

Each cutaway experiment gets its own ``--seed`` (the repetition), so no two share an order of
variants; ``--fixed-seed N`` gives them all the same one instead, and ``--no-seed`` none, as a
user runs cutaway (before each experiment drew its own seed, they all ran seed 0's orders).
The verdict read is that of ``--metric`` (wall by default; cpu = user + sys); ``--until`` and
``--margin`` are passed on, and with ``--primary-metric`` the metric is declared primary (judged
at full alpha and steering ``--until``; otherwise a non-wall metric is Holm-adjusted beside
wall time). With ``--before GIT_REF`` the cutaway experiments also run with that
commit's sources (a temporary git worktree, its fork server compiled there, first on
PYTHONPATH), interleaved with this tree's, and the summary sets them side by side.

Besides verdicts the summary reports the bias: over the A/A experiments the mean of
``ratio - 1`` with its standard error and a sign test (how many ratios fell below 1 against
above: a fair estimator puts half on each side), and over the A/B experiments the mean estimated
change against the real one.

``--confidence LEVEL`` is passed on; ``--reread-confidence LEVEL`` (with ``--primary-metric``)
also reads every experiment's stored runs at that level, a row of its own, as ``cutaway report ID
--confidence LEVEL`` would: the same runs judged at two levels. With ``--summarize FILE`` it
reads them from ``--db`` afterwards.

Every finished experiment is appended to a JSON-lines file in bench/results/ at once, so a crash
keeps what was done. At the end a Markdown summary is printed; ``--summarize FILE`` prints it
again from a results file. Usage: ``python bench/precision.py --repetitions 20 --budget 60``, or
for the bias of a 0.2 % change on cpu, ``python bench/precision.py --repetitions 40 --budget 60
--change 0.002 --metric cpu --until 0.1% --margin 0.1% --tools cutaway [--before REF]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy
from scipy import stats

from cutaway.cpu_steal import cpu_ticks, steal_share

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
THIS_TREE = "this tree"
TARGET_RUN_SECONDS = 0.1
EXTRA_WORK_FRACTION = 0.01
ALPHA = 0.05
CUTAWAY_VERDICTS = ("regressed", "improved", "equivalent", "inconclusive", "error")
HYPERFINE_VERDICTS = ("regressed", "improved", "no difference", "error")

Record = dict[str, Any]


@dataclass(frozen=True)
class Workload:
    """The calibrated pair of commands: A does ``iterations_a``, B the change more."""

    spin_path: Path
    iterations_a: int
    iterations_b: int
    mean_run_seconds: float

    def command(self, iterations: int) -> str:
        return f"{shlex.quote(str(self.spin_path))} {iterations}"


def compile_spin(results_dir: Path) -> Path:
    spin_path = results_dir / "spin"
    source_path = BENCH_DIR / "spin.c"
    subprocess.run(["gcc", "-O2", "-o", str(spin_path), str(source_path)], check=True)
    return spin_path


def time_runs(spin_path: Path, iterations: int, runs: int) -> list[float]:
    """Wall seconds of ``runs`` runs of spin, output discarded."""
    wall_seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([str(spin_path), str(iterations)], check=True, stdout=subprocess.DEVNULL)
        wall_seconds.append(time.perf_counter() - started)
    return wall_seconds


def calibrate(spin_path: Path, target_seconds: float, change: float) -> Workload:
    """Scale N until ``spin N`` takes about ``target_seconds`` (two refinements are plenty:
    the work is linear in N), then measure the mean time per run for hyperfine's run count."""
    iterations = 10_000_000
    for runs in (3, 7):
        median_seconds = statistics.median(time_runs(spin_path, iterations, runs))
        iterations = max(1, round(iterations * target_seconds / median_seconds))
    iterations_b = round((1.0 + change) * iterations)
    mean_a = statistics.fmean(time_runs(spin_path, iterations, 10))
    mean_b = statistics.fmean(time_runs(spin_path, iterations_b, 10))
    return Workload(spin_path, iterations, iterations_b, (mean_a + mean_b) / 2.0)


@dataclass(frozen=True)
class Settings:
    """What every cutaway experiment of a benchmark run is given and read by."""

    metric: str = "wall"
    fixed_seed: int | None = None  # every experiment's --seed; None: the repetition's number
    no_seed: bool = False  # give no --seed: each cutaway's default, as a user runs it
    until: str | None = None
    margin: str | None = None
    primary_metric: bool = False  # pass --primary-metric METRIC: judged at full alpha
    estimator: str | None = None  # pass --estimator: "trimmed" (or "mean")
    confidence: str | None = None  # pass --confidence (e.g. "99%")
    # Also read each experiment's stored runs at these confidence levels (with --primary-metric)
    reread_confidences: tuple[float, ...] = ()
    # Where each cutaway under test comes from: None for this tree's installed cutaway, else a
    # source directory put first on PYTHONPATH.
    sources: dict[str, Path | None] = field(default_factory=lambda: {THIS_TREE: None})


def cutaway_command() -> list[str]:
    found = shutil.which("cutaway")
    return [found] if found else [sys.executable, "-m", "cutaway"]


def source_invocation(source: Path | None) -> tuple[list[str], dict[str, str]]:
    """The command that runs cutaway from ``source`` (None: the installed one), and its
    environment."""
    if source is None:
        return cutaway_command(), dict(os.environ)
    return [sys.executable, "-m", "cutaway"], {**os.environ, "PYTHONPATH": str(source / "src")}


def run_cutaway(
    workload: Workload,
    kind: str,
    seed: int,
    budget_seconds: float,
    paths: dict[str, Path],
    settings: Settings,
    source_name: str,
) -> Record:
    """One cutaway experiment; its verdict is that of the ``settings.metric`` comparison."""
    second = workload.iterations_b if kind == "ab" else workload.iterations_a
    second_name = "B" if kind == "ab" else "A2"
    label = "before" if source_name != THIS_TREE else "cutaway"
    report_path = paths["raw"] / f"{label}-{kind}-seed{seed}.json"
    options = {
        "--rounds": "10" if settings.until else "100000",
        "--warmup": "2",
        "--max-time": f"{budget_seconds:g}s",
        "--db": str(paths["db"] if source_name == THIS_TREE else paths["db_before"]),
        "--seed": str(seed if settings.fixed_seed is None else settings.fixed_seed),
        "--color": "never",
        "--export-json": str(report_path),
    }
    if settings.no_seed:
        del options["--seed"]
    if settings.until:
        options["--until"] = settings.until
    if settings.margin:
        options["--margin"] = settings.margin
    if settings.primary_metric:
        options["--primary-metric"] = settings.metric
    if settings.estimator:
        options["--estimator"] = settings.estimator
    if settings.confidence:
        options["--confidence"] = settings.confidence
    command, env = source_invocation(settings.sources[source_name])
    argv = [*command, "run", "-c", workload.command(workload.iterations_a)]
    argv += ["-c", workload.command(second), "-n", "A", "-n", second_name]
    argv += [word for option in options.items() for word in option]
    completed = subprocess.run(argv, capture_output=True, text=True, env=env)
    if completed.returncode != 0 or not report_path.exists():
        # The runs may well be stored even when the report failed: keep the experiment's id so
        # it can be exported again (`cutaway export ID --format json --db ...`).
        stored_as = re.search(r"experiment #(\d+)", completed.stderr)
        return {
            "verdict": "error",
            "returncode": completed.returncode,
            "stderr": completed.stderr[-2000:],
            "experiment_id": int(stored_as.group(1)) if stored_as else None,
        }
    report = json.loads(report_path.read_text())
    chosen = next(c for c in report["comparisons"] if c["metric"] == settings.metric)
    summary_a = next(
        s for s in report["summaries"] if s["metric"] == settings.metric and s["variant"] == "A"
    )
    return {
        "verdict": chosen["verdict"],
        "metric": settings.metric,
        "ratio": chosen["ratio"],
        "ci_low": chosen["ci_low"],
        "ci_high": chosen["ci_high"],
        "p_value": chosen["p_value"],
        "n_pairs": chosen["n_pairs"],
        "mean_a_seconds": summary_a["mean"],
        "sd_a_seconds": summary_a["sd"],
        "experiment_id": report["experiments"][0]["id"],
        "report_path": str(report_path),
        "estimator": settings.estimator,
        "confidence": settings.confidence,
        **rereadings(options["--db"], report["experiments"][0]["id"], settings),
    }


def rereadings(db: str, experiment_id: int, settings: Settings) -> Record:
    """The same stored runs read again (only with --primary-metric, so that every reading
    judges the metric at full alpha, as cutaway judges a primary metric): by the other
    estimator at the experiment's level, and by the experiment's estimator at each of
    ``settings.reread_confidences``."""
    if not settings.primary_metric:
        return {}
    other = "mean" if settings.estimator == "trimmed" else "trimmed"
    readings = [reading(db, experiment_id, settings.metric, estimator=other)]
    readings += [
        reading(db, experiment_id, settings.metric, confidence=level)
        for level in settings.reread_confidences
    ]
    return {"readings": [found for found in readings if found is not None]}


def reading(
    db: str,
    experiment_id: int,
    metric: str,
    estimator: str | None = None,
    confidence: float | None = None,
) -> Record | None:
    """The experiment's ``metric`` comparison as cutaway reads it with another estimator or at
    another confidence level (None: the experiment's own), judged at full alpha."""
    from cutaway import api
    from cutaway.stats import classify, paired_ratio, trim_for

    data = api.load(experiment_id, db=db)
    spec = data.spec
    estimator = estimator or spec.estimator
    confidence = confidence or spec.confidence
    table = data.store.metric_table(experiment_id, metric)
    columns = [
        table.variants.index(name) for name in (spec.baseline, "A2", "B") if name in table.variants
    ]
    base, variant = table.values[:, columns[0]], table.values[:, columns[1]]
    pairs = ~(numpy.isnan(base) | numpy.isnan(variant))
    estimate = paired_ratio(
        base[pairs], variant[pairs], confidence=confidence, seed=spec.seed,
        trim=trim_for(estimator),
    )  # fmt: skip
    if estimate is None:
        return None
    verdict = classify(
        estimate.ci_low, estimate.ci_high, estimate.p_value, spec.margin, 1.0 - confidence
    )
    return {
        "estimator": estimator,
        "confidence": confidence,
        "verdict": verdict,
        "ratio": estimate.ratio,
        "ci_low": estimate.ci_low,
        "ci_high": estimate.ci_high,
        "p_value": estimate.p_value,
        "n_pairs": estimate.n,
    }


def welch_reading(times_a: list[float], times_b: list[float]) -> Record:
    """Welch's t-test on hyperfine's times, and an approximate 95 % interval of B/A (the
    interval of the difference of means divided by mean A, ignoring the error of mean A)."""
    test = stats.ttest_ind(times_b, times_a, equal_var=False)
    mean_a, mean_b = statistics.fmean(times_a), statistics.fmean(times_b)
    p_value = float(test.pvalue)
    verdict = "no difference"
    if p_value < ALPHA:
        verdict = "regressed" if mean_b > mean_a else "improved"
    interval = test.confidence_interval(1.0 - ALPHA)
    return {
        "verdict": verdict,
        "ratio": mean_b / mean_a,
        "ci_low": 1.0 + float(interval.low) / mean_a,
        "ci_high": 1.0 + float(interval.high) / mean_a,
        "p_value": p_value,
        "mean_a_seconds": mean_a,
        "sd_a_seconds": statistics.stdev(times_a),
        "mean_b_seconds": mean_b,
        "sd_b_seconds": statistics.stdev(times_b),
        "n_a": len(times_a),
        "n_b": len(times_b),
    }


def run_hyperfine(
    workload: Workload,
    kind: str,
    seed: int,
    budget_seconds: float,
    paths: dict[str, Path],
    settings: Settings,
    source_name: str,
) -> Record:
    """One hyperfine run of both commands, with as many runs as fit in the budget."""
    second = workload.iterations_b if kind == "ab" else workload.iterations_a
    runs = max(2, round(budget_seconds / (2.0 * workload.mean_run_seconds)))
    export_path = paths["raw"] / f"hyperfine-{kind}-seed{seed}.json"
    command_a = workload.command(workload.iterations_a)
    command_b = workload.command(second)
    argv = [
        "hyperfine",
        "-N",
        "--style",
        "none",
        "--warmup",
        "2",
        "--runs",
        str(runs),
        "--export-json",
        str(export_path),
        command_a,
        command_b,
    ]
    completed = subprocess.run(argv, capture_output=True, text=True)
    if completed.returncode != 0 or not export_path.exists():
        return {
            "verdict": "error",
            "returncode": completed.returncode,
            "stderr": completed.stderr[-2000:],
        }
    results = json.loads(export_path.read_text())["results"]
    record = welch_reading(results[0]["times"], results[1]["times"])
    record["runs"] = runs
    record["export_path"] = str(export_path)
    return record


Experiment = Callable[[Workload, str, int, float, dict[str, Path], Settings, str], Record]


def experiment_plan(tools: list[str], sources: list[str]) -> list[tuple[str, str, str, Experiment]]:
    """(tool, source, kind, experiment) for one repetition: A/B then A/A of each cutaway source
    and of hyperfine, interleaved."""
    plan: list[tuple[str, str, str, Experiment]] = []
    for kind in ("ab", "aa"):
        if "cutaway" in tools:
            plan += [("cutaway", source, kind, run_cutaway) for source in sources]
        if "hyperfine" in tools:
            plan.append(("hyperfine", "", kind, run_hyperfine))
    return plan


def run_repetition(
    repetition: int,
    workload: Workload,
    budget_seconds: float,
    paths: dict[str, Path],
    settings: Settings,
    tools: list[str],
) -> Iterable[Record]:
    """The repetition's experiments, the starting one rotating with the repetition."""
    plan = experiment_plan(tools, list(settings.sources))
    shift = repetition % len(plan)
    for position, (tool, source, kind, experiment) in enumerate(plan[shift:] + plan[:shift]):
        loadavg_start = os.getloadavg()
        ticks_start = cpu_ticks()
        started = time.monotonic()
        record = experiment(workload, kind, repetition, budget_seconds, paths, settings, source)
        yield {
            "steal_share": steal_share(
                {"cpu_ticks_start": ticks_start, "cpu_ticks_end": cpu_ticks()}
            ),
            "type": "experiment",
            "repetition": repetition,
            "position": position,
            "tool": tool,
            "source": source,
            "kind": kind,
            "elapsed_seconds": time.monotonic() - started,
            "loadavg_start": list(loadavg_start),
            **record,
        }


def machine_description() -> Record:
    cpu_model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu_model = line.split(":", 1)[1].strip()
            break
    hyperfine = subprocess.run(["hyperfine", "--version"], capture_output=True, text=True)
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "cores": os.cpu_count(),
        "cpu_model": cpu_model,
        "kernel": os.uname().release,
        "hyperfine": hyperfine.stdout.strip(),
        "python": sys.version.split()[0],
    }


def group_of(record: Record) -> str:
    """The row a record belongs to: hyperfine, this tree's cutaway, cutaway at --before, or
    the same runs read by the other estimator."""
    if record["tool"] == "hyperfine":
        return "hyperfine + Welch t-test"
    if record.get("reread_as"):
        return f"same runs, {record['reread_as']}"
    source = record.get("source") or THIS_TREE
    name = "cutaway" if source == THIS_TREE else f"cutaway at {source}"
    estimator = record.get("estimator")
    name = f"{name} --estimator {estimator}" if estimator else name
    return f"{name} --confidence {record['confidence']}" if record.get("confidence") else name


def with_rereadings(experiments: list[Record]) -> list[Record]:
    """The experiments, and after them each cutaway experiment's runs read again (rereadings):
    one row per reading in every table."""
    reread = []
    for record in experiments:
        for found in readings_of(record):
            named = f"--estimator {found['estimator']}"
            if found.get("confidence") and found["estimator"] == (
                record.get("estimator") or "mean"
            ):
                named = f"at {100.0 * found['confidence']:g} %"
            reread.append({**record, **found, "reread_as": named})
    return experiments + reread


def readings_of(record: Record) -> list[Record]:
    """The record's rereadings; "other_estimator" is the one reading that results files kept
    before --reread-confidence."""
    if record.get("readings"):
        return list(record["readings"])
    return [record["other_estimator"]] if record.get("other_estimator") else []


def reread_records(records: list[Record], db: Path, levels: list[float]) -> list[Record]:
    """``records`` (a results file's) with each cutaway experiment's runs, stored in ``db``,
    also read at each of ``levels``: for a results file whose run did not ask for them."""
    setups = [r for r in records if r["type"] == "setup"]
    metric = setups[0].get("metric", "wall") if setups else "wall"
    updated = []
    for record in records:
        if record["type"] == "experiment" and record.get("experiment_id") is not None:
            found = [
                reading(str(db), record["experiment_id"], metric, confidence=level)
                for level in levels
            ]
            kept = readings_of(record)
            record = {**record, "readings": kept + [f for f in found if f is not None]}
        updated.append(record)
    return updated


def groups(experiments: list[Record]) -> list[str]:
    """The groups present, cutaway first, in the order they first appear."""
    names = list(dict.fromkeys(group_of(r) for r in experiments))
    return sorted(names, key=lambda name: name.startswith("hyperfine"))


def of_group(experiments: list[Record], group: str, kind: str) -> list[Record]:
    return [r for r in experiments if group_of(r) == group and r["kind"] == kind]


def share(records: list[Record], verdicts: tuple[str, ...]) -> str:
    """ "k/n (p %)" of the records, errors left out, whose verdict is one of ``verdicts``."""
    valid = [r for r in records if r["verdict"] != "error"]
    if not valid:
        return "n/a"
    hits = sum(r["verdict"] in verdicts for r in valid)
    return f"{hits}/{len(valid)} ({100.0 * hits / len(valid):.0f} %)"


def median_of(records: list[Record], value: Callable[[Record], float], digits: int) -> str:
    values = [value(r) for r in records if r["verdict"] != "error" and r.get("ci_low") is not None]
    return f"{statistics.median(values):.{digits}f}" if values else "n/a"


def headline_table(experiments: list[Record]) -> list[str]:
    lines = [
        "| tool | A/B says regressed (target >= 90 %) | A/A false alarms (target <= 5 %) "
        "| median A/B ratio | median A/B CI width | median A/A ratio | median A/A CI width |",
        "|---|---|---|---|---|---|---|",
    ]
    for group in groups(experiments):
        ab = of_group(experiments, group, "ab")
        aa = of_group(experiments, group, "aa")
        lines.append(
            f"| {group} | {share(ab, ('regressed',))} | {share(aa, ('regressed', 'improved'))} "
            f"| {median_of(ab, lambda r: r['ratio'], 4)} "
            f"| {median_of(ab, lambda r: 100.0 * (r['ci_high'] - r['ci_low']), 2)} % "
            f"| {median_of(aa, lambda r: r['ratio'], 4)} "
            f"| {median_of(aa, lambda r: 100.0 * (r['ci_high'] - r['ci_low']), 2)} % |"
        )
    return lines


def mean_change(records: list[Record]) -> tuple[float, float] | None:
    """Mean of ``ratio - 1`` in %, and its standard error, over the records with a ratio."""
    changes = [100.0 * (r["ratio"] - 1.0) for r in records if r["verdict"] != "error"]
    if len(changes) < 2:
        return None
    return statistics.fmean(changes), statistics.stdev(changes) / len(changes) ** 0.5


def sign_test(records: list[Record]) -> str:
    """How many A/A ratios fell below 1 against above, and the two-sided binomial p of that
    split under a fair coin (a small p: the estimate leans to one side)."""
    ratios = [r["ratio"] for r in records if r["verdict"] != "error"]
    below = sum(ratio < 1.0 for ratio in ratios)
    above = sum(ratio > 1.0 for ratio in ratios)
    if below + above == 0:
        return "n/a | n/a"
    p_value = stats.binomtest(below, below + above).pvalue
    return f"{below} / {above} | {p_value:.2g}"


def bias_table(experiments: list[Record], change: float | None) -> list[str]:
    """The A/A bias (mean ratio - 1, sign test) and the mean A/B estimate against the change
    made, per tool and source."""
    real = f"{100.0 * change:+.2f} %" if change is not None else "?"
    lines = [
        "| tool | A/A mean ratio - 1 (± s.e.) | A/A below / above 1 | sign test p "
        f"| A/B mean estimate (± s.e.; real {real}) | A/B estimate / real |",
        "|---|---|---|---|---|---|",
    ]
    for group in groups(experiments):
        aa = mean_change(of_group(experiments, group, "aa"))
        ab = mean_change(of_group(experiments, group, "ab"))
        aa_cell = "n/a" if aa is None else f"{aa[0]:+.4f} % ± {aa[1]:.4f}"
        ab_cell = "n/a" if ab is None else f"{ab[0]:+.4f} % ± {ab[1]:.4f}"
        found = "n/a" if ab is None or not change else f"{ab[0] / (100.0 * change):.2f}"
        lines.append(
            f"| {group} | {aa_cell} | {sign_test(of_group(experiments, group, 'aa'))} "
            f"| {ab_cell} | {found} |"
        )
    return lines


def distribution_table(experiments: list[Record], change_label: str) -> list[str]:
    columns = ("regressed", "improved", "equivalent", "inconclusive", "no difference", "error")
    lines = [
        "| tool | comparison | " + " | ".join(columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for group in groups(experiments):
        verdicts = HYPERFINE_VERDICTS if group.startswith("hyperfine") else CUTAWAY_VERDICTS
        for kind, label in (("ab", f"A vs B ({change_label})"), ("aa", "A vs A")):
            counts = Counter(r["verdict"] for r in of_group(experiments, group, kind))
            cells = [str(counts[c]) if c in verdicts else "-" for c in columns]
            lines.append(f"| {group} | {label} | " + " | ".join(cells) + " |")
    return lines


def noise_table(experiments: list[Record]) -> list[str]:
    """Medians over experiments of what each tool saw of A: the spread of single runs."""
    lines = [
        "| tool | comparison | median runs (pairs) per command | median mean of A | "
        "median sd of A | median sd / mean |",
        "|---|---|---|---|---|---|",
    ]
    for group in groups(experiments):
        for kind in ("ab", "aa"):
            done = [r for r in of_group(experiments, group, kind) if r["verdict"] != "error"]
            if not done:
                continue
            runs = statistics.median(int(r.get("n_pairs") or r.get("n_a") or 0) for r in done)
            mean_ms = statistics.median(1000.0 * r["mean_a_seconds"] for r in done)
            sd_ms = statistics.median(1000.0 * r["sd_a_seconds"] for r in done)
            cv = statistics.median(r["sd_a_seconds"] / r["mean_a_seconds"] for r in done)
            lines.append(
                f"| {group} | {kind.upper()[0]}/{kind.upper()[1]} | {runs:.0f} "
                f"| {mean_ms:.2f} ms | {sd_ms:.2f} ms | {100.0 * cv:.2f} % |"
            )
    return lines


def steal_sentence(experiments: list[Record]) -> str:
    """The CPU time a hypervisor took during the experiments (steal widens every interval)."""
    shares = [r["steal_share"] for r in experiments if r.get("steal_share") is not None]
    if not shares:
        return ""
    return (
        f" Steal time (CPU time the hypervisor took): median {_percent(statistics.median(shares))}"
        f", {_percent(min(shares))} to {_percent(max(shares))}."
    )


def _percent(share: float | None) -> str:
    return "" if share is None else f"{100.0 * share:.1f} %"


def details_table(experiments: list[Record]) -> list[str]:
    """One row per experiment, in the order they ran."""
    lines = [
        "| repetition | order | tool | comparison | verdict | ratio | 95 % CI | p | load | steal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in experiments:
        if r["verdict"] == "error":
            cells = "error | | | |"
        else:
            cells = (
                f"{r['verdict']} | {r['ratio']:.4f} | [{r['ci_low']:.4f}, {r['ci_high']:.4f}] "
                f"| {r['p_value']:.2g} |"
            )
        lines.append(
            f"| {r['repetition']} | {r['position'] + 1} | {group_of(r)} | {r['kind']} | {cells} "
            f"{r['loadavg_start'][0]:.2f} | {_percent(r.get('steal_share'))} |"
        )
    return lines


def summarize(records: list[Record], details: bool = False) -> str:
    setups = [r for r in records if r["type"] == "setup"]
    experiments = with_rereadings([r for r in records if r["type"] == "experiment"])
    repetitions = sorted({r["repetition"] for r in experiments})
    header = []
    change = None
    if setups:
        setup = setups[0]
        change = setup.get("change", EXTRA_WORK_FRACTION)
        passed = " ".join(
            f"--{name.replace('_', '-')} {setup[name]}"
            for name in ("until", "margin", "fixed_seed")
            if setup.get(name) is not None
        )
        passed += " --no-seed" if setup.get("no_seed") else ""
        passed = (passed + (" --primary-metric" if setup.get("primary_metric") else "")).strip()
        if setup.get("estimator"):
            passed += f" --estimator {setup['estimator']}"
        if setup.get("confidence"):
            passed += f" --confidence {setup['confidence']}"
        header = [
            f"Workload: A = `spin {setup['iterations_a']}`, B = `spin {setup['iterations_b']}` "
            f"({100.0 * change:+.2f} % of work; mean {1000.0 * setup['mean_run_seconds']:.1f} ms "
            f"per run at calibration); budget {setup['budget_seconds']:g} s per experiment; "
            f"metric `{setup.get('metric', 'wall')}`{'; ' + passed if passed else ''}; "
            f"{len(repetitions)} repetition(s) with results, "
            f"{sum(not r.get('reread_as') for r in experiments)} experiments."
            + steal_sentence(experiments),
            "",
        ]
    change_label = "+1 %" if change is None else f"{100.0 * change:+g} %"
    more = ["", "Every experiment:", "", *details_table(experiments)] if details else []
    return "\n".join(
        [
            *header,
            *headline_table(experiments),
            "",
            "Bias:",
            "",
            *bias_table(experiments, change),
            "",
            "Verdicts:",
            "",
            *distribution_table(experiments, change_label),
            "",
            "Noise seen:",
            "",
            *noise_table(experiments),
            *more,
        ]
    )


def progress_line(record: Record) -> str:
    return (
        f"repetition {record['repetition']} {group_of(record)} {record['kind']}: "
        f"{record['verdict']} ratio={record.get('ratio')} ({record['elapsed_seconds']:.0f} s)"
    )


def read_records(path: Path) -> list[Record]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def pooled(files: list[list[Record]]) -> list[Record]:
    """The records of several results files as one: each file's repetitions numbered after the
    previous file's, so that they count apart."""
    records: list[Record] = []
    offset = 0
    for file_records in files:
        numbers = [r["repetition"] for r in file_records if r["type"] == "experiment"]
        records += [
            {**r, "repetition": r["repetition"] + offset} if r["type"] == "experiment" else r
            for r in file_records
        ]
        offset += max(numbers, default=-1) + 1
    return records


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repetitions", type=int, default=20, help="repetitions (default 20)")
    parser.add_argument(
        "--budget", type=float, default=60.0, help="seconds per experiment (default 60)"
    )
    parser.add_argument(
        "--target-seconds", type=float, default=TARGET_RUN_SECONDS, help="duration of spin N"
    )
    parser.add_argument(
        "--change",
        type=float,
        default=EXTRA_WORK_FRACTION,
        help="B's extra work as a fraction (default 0.01; 0.002 is 0.2 %%)",
    )
    parser.add_argument(
        "--metric", default="wall", help="the comparison whose verdict is read (wall, cpu...)"
    )
    parser.add_argument(
        "--fixed-seed",
        type=int,
        help="give every cutaway experiment this --seed (default: the repetition's number), "
        "to see whether experiments sharing their orders share an offset",
    )
    parser.add_argument(
        "--no-seed",
        action="store_true",
        help="give cutaway no --seed, as a user runs it: each version's own default",
    )
    parser.add_argument("--until", help="passed to cutaway run (e.g. 0.1%%)")
    parser.add_argument("--margin", help="passed to cutaway run (e.g. 0.1%%)")
    parser.add_argument(
        "--primary-metric",
        action="store_true",
        help="declare --metric the experiments' primary metric (cutaway run --primary-metric): "
        "judged at full alpha instead of Holm-adjusted beside wall time",
    )
    parser.add_argument(
        "--estimator",
        choices=("mean", "trimmed"),
        help="passed to cutaway run; with --primary-metric the summary also reads the same runs "
        "with the other estimator, as a row of its own",
    )
    parser.add_argument("--confidence", help="passed to cutaway run (e.g. 99%%)")
    parser.add_argument(
        "--reread-confidence",
        type=float,
        action="append",
        default=[],
        metavar="LEVEL",
        help="with --primary-metric, also read each experiment's runs at this confidence level "
        "(e.g. 0.99), as a row of its own; repeatable. With --summarize it reads them from "
        "--db",
    )
    parser.add_argument(
        "--db",
        type=Path,
        help="with --summarize and --reread-confidence: the store the experiments are in "
        "(default: precision.db in --results-dir)",
    )
    parser.add_argument(
        "--tools",
        default="cutaway,hyperfine",
        help="comma-separated: cutaway, hyperfine (default both)",
    )
    parser.add_argument(
        "--before", help="a git ref whose cutaway runs beside this tree's, interleaved"
    )
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument(
        "--summarize",
        type=Path,
        nargs="+",
        help="only print the summary of a results file; of several, pooled (runs of the same "
        "settings: the first file's setup is the one named)",
    )
    parser.add_argument(
        "--details", action="store_true", help="with --summarize, also list every experiment"
    )
    return parser.parse_args()


def checkout_before(ref: str, scratch: Path) -> Path:
    """``ref`` checked out in a temporary git worktree, with its fork server compiled in place
    (all that `cutaway run` without probes needs of the native parts), as setup.py builds it:
    static when a static libc is there."""
    directory = scratch / "before"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(directory), ref],
        check=True,
        capture_output=True,
    )
    print(f"compiling {ref}'s fork server in {directory}...", file=sys.stderr)
    compile_command = [
        "gcc", "-O2", "-Wall", "-Inative", "native/cw_forkserver.c",
        "-o", "src/cutaway/cw_forkserver",
    ]  # fmt: skip
    static = subprocess.run([*compile_command, "-static"], cwd=directory, capture_output=True)
    if static.returncode != 0:
        subprocess.run(compile_command, cwd=directory, check=True, capture_output=True)
    return directory


def commit_of(directory: Path) -> str:
    completed = subprocess.run(
        ["git", "-C", str(directory), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    )
    return completed.stdout.strip()


def remove_before(directory: Path) -> None:
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(directory)],
        check=False,
        capture_output=True,
    )


def main() -> int:
    arguments = parse_arguments()
    if arguments.summarize is not None:
        records = pooled([read_records(path) for path in arguments.summarize])
        if arguments.reread_confidence and len(arguments.summarize) > 1:
            raise SystemExit("--reread-confidence reads one results file's store at a time")
        if arguments.reread_confidence:
            db = arguments.db or arguments.results_dir / "precision.db"
            records = reread_records(records, db, arguments.reread_confidence)
        print(summarize(records, arguments.details))
        return 0
    tools = [tool.strip() for tool in arguments.tools.split(",") if tool.strip()]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    results_dir: Path = arguments.results_dir
    paths = {
        "raw": results_dir / f"precision-{stamp}",
        "db": results_dir / "precision.db",
        "db_before": results_dir / "precision-before.db",  # an older schema may differ
    }
    paths["raw"].mkdir(parents=True, exist_ok=True)
    lines_path = results_dir / f"precision-{stamp}.jsonl"
    with tempfile.TemporaryDirectory(prefix="precision-") as scratch:
        sources: dict[str, Path | None] = {THIS_TREE: None}
        if arguments.before:
            sources[arguments.before] = checkout_before(arguments.before, Path(scratch))
        try:
            settings = Settings(
                arguments.metric,
                arguments.fixed_seed,
                arguments.no_seed,
                arguments.until,
                arguments.margin,
                sources=sources,
                primary_metric=arguments.primary_metric,
                estimator=arguments.estimator,
                confidence=arguments.confidence,
                reread_confidences=tuple(arguments.reread_confidence),
            )
            records = run_all(arguments, tools, settings, paths, lines_path)
        finally:
            if arguments.before:
                remove_before(Path(scratch) / "before")
    print(summarize(records))
    return 0


def run_all(
    arguments: argparse.Namespace,
    tools: list[str],
    settings: Settings,
    paths: dict[str, Path],
    lines_path: Path,
) -> list[Record]:
    workload = calibrate(
        compile_spin(arguments.results_dir), arguments.target_seconds, arguments.change
    )
    setup = {
        "type": "setup",
        "iterations_a": workload.iterations_a,
        "iterations_b": workload.iterations_b,
        "mean_run_seconds": workload.mean_run_seconds,
        "budget_seconds": arguments.budget,
        "repetitions": arguments.repetitions,
        "change": arguments.change,
        "metric": settings.metric,
        "fixed_seed": settings.fixed_seed,
        "no_seed": settings.no_seed,
        "until": settings.until,
        "margin": settings.margin,
        "primary_metric": settings.primary_metric,
        "estimator": settings.estimator,
        "confidence": settings.confidence,
        "reread_confidences": list(settings.reread_confidences),
        "tools": tools,
        "sources": {
            name: None if source is None else commit_of(source)
            for name, source in settings.sources.items()
        },
        **machine_description(),
    }
    records: list[Record] = [setup]
    with lines_path.open("a") as lines:
        print(json.dumps(setup), file=lines, flush=True)
        print(f"results: {lines_path}", file=sys.stderr)
        for repetition in range(arguments.repetitions):
            for record in run_repetition(
                repetition, workload, arguments.budget, paths, settings, tools
            ):
                records.append(record)
                print(json.dumps(record), file=lines, flush=True)
                print(progress_line(record), file=sys.stderr, flush=True)
    return records


if __name__ == "__main__":
    sys.exit(main())
