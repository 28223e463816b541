"""The experiment as the user wrote it, typed and validated: variants, conditions, hooks,
declared metrics and the whole :class:`Spec`.

Immutable, no I/O, imports nothing of cutaway outside ``cutaway.model``.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import field, fields, replace

from cutaway.model.frozen import frozen_mapping
from cutaway.model.metrics import DEFAULT_MARGIN, LOWER_IS_BETTER, PROCESS_METRICS, Metric
from cutaway.model.probe_spec import ProbeSpec, unset
from cutaway.value_class import value_class

# A hook may build, install or load data, so its limit is generous: it only bounds a hang.
DEFAULT_HOOK_TIMEOUT_SECONDS = 600.0


@value_class
class Hooks:
    """Commands run around a variant's runs, named as hyperfine names them. None of them is
    measured. ``setup`` runs once before the variant's first run, ``prepare`` before each run,
    ``conclude`` after each run, ``cleanup`` once after the last run (also after a failure or an
    interruption)."""

    setup: str | None = None
    prepare: str | None = None
    conclude: str | None = None
    cleanup: str | None = None


# Where a measured command's standard output goes, as hyperfine's --output: "null" (discarded,
# the default), "pipe" (captured in memory, as a consumer would read it), "inherit" (cutaway's
# own stdout, for --show-output), or anything else: the path of a file it is written to (truncated
# at each run). A variant with an output metric has its stdout captured in every mode, then
# copied to the terminal or the file after the run.
OUTPUT_MODES = ("null", "pipe", "inherit")

# How the paired comparisons estimate a change (``estimator``): the geometric mean of the
# rounds' ratios, or their 20 % trimmed mean (cutaway.stats.paired, the module docstring).
ESTIMATORS = ("mean", "trimmed")

# Where a variant's own version comes from (the experiment file's keys): the text as given, the
# ``git describe`` of a directory, or what a shell command prints.
VERSION_KEYS = ("version", "version_from", "version_command")


@value_class
class VersionSource:
    """A variant's own version, as asked for: ``key`` is one of VERSION_KEYS and ``text`` the
    version itself (``version``), an absolute directory (``version_from``) or shell code
    (``version_command``). It is read once before the experiment's first round and stored with
    the variant (``cutaway.versions``). ``key_path`` is where it was written (the file's key,
    or the option), for messages only."""

    key: str
    text: str
    key_path: tuple[str | int, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "text": self.text}


@value_class
class Variant:
    """One thing being measured: a command and everything it runs with.

    ``command`` is a shell string when ``shell`` is true, else an argument vector that is
    executed directly (no shell: nothing but the command itself is measured)."""

    name: str
    command: tuple[str, ...] | str
    shell: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    hooks: Hooks = Hooks()
    params: Mapping[str, str] = field(default_factory=dict)  # matrix values that made it
    stdin: str | None = None  # a file fed to the command's standard input; None: /dev/null
    stdout: str = "null"  # one of OUTPUT_MODES, or a file's path
    # Under [[conditions]]: the condition this copy of a declared variant runs in, and the
    # declared variant's name (``family``), whose setup and cleanup hooks run once for all
    # its conditions.
    condition: str | None = None
    family: str | None = None
    # Its own version (the experiment's label is the version of a variant without one). Not
    # part of what it runs: cutaway.history.workload_identity leaves it out.
    version: VersionSource | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "env", frozen_mapping(self.env))
        object.__setattr__(self, "params", frozen_mapping(self.params))
        if isinstance(self.command, list):
            object.__setattr__(self, "command", tuple(self.command))

    @property
    def command_text(self) -> str:
        """The command as one line a shell would read (an argument vector shell-quoted)."""
        return self.command if isinstance(self.command, str) else shlex.join(self.command)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "command": self.command if isinstance(self.command, str) else list(self.command),
            "shell": self.shell,
            "env": dict(self.env),
            "cwd": self.cwd,
            "hooks": {
                "setup": self.hooks.setup,
                "prepare": self.hooks.prepare,
                "conclude": self.hooks.conclude,
                "cleanup": self.hooks.cleanup,
            },
            "params": dict(self.params),
            "stdin": self.stdin,
            "stdout": self.stdout,
            **({"condition": self.condition, "family": self.family} if self.condition else {}),
            **({"version": self.version.to_dict()} if self.version else {}),
        }

    @property
    def family_name(self) -> str:
        """The declared variant this one was made from (itself without conditions)."""
        return self.family or self.name

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Variant:
        command = data["command"]
        hooks = data.get("hooks") or {}
        assert isinstance(hooks, Mapping)
        version = data.get("version")
        return cls(
            name=str(data["name"]),
            command=command if isinstance(command, str) else tuple(command),  # type: ignore[arg-type]
            shell=bool(data.get("shell", False)),
            env=dict(data.get("env") or {}),  # type: ignore[call-overload]
            cwd=data.get("cwd"),  # type: ignore[arg-type]
            hooks=Hooks(**{k: hooks.get(k) for k in ("setup", "prepare", "conclude", "cleanup")}),
            params=dict(data.get("params") or {}),  # type: ignore[call-overload]
            stdin=data.get("stdin"),  # type: ignore[arg-type]
            stdout=str(data.get("stdout") or "null"),
            condition=None if data.get("condition") is None else str(data["condition"]),
            family=None if data.get("family") is None else str(data["family"]),
            version=VersionSource(str(version["key"]), str(version["text"]))
            if isinstance(version, Mapping)
            else None,
        )


@value_class
class Condition:
    """A condition every variant runs in (``[[conditions]]``): cold and warm. ``prepare`` is
    shell code run before each run in it, after the variant's own prepare hook (dropping the
    page cache, restarting a server, or warming it). Each variant runs once per condition in
    every round; its conditions are compared with its first condition, round by round."""

    name: str
    prepare: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "prepare": self.prepare}


METRIC_SOURCES = ("output", "command", "file", "process")
OUTPUT_STREAMS = ("stdout", "stderr")  # where an output metric reads
PROCESS_STATS = ("cpu", "rss", "threads", "fds")  # what a process metric reads in /proc
DEFAULT_SAMPLE_INTERVAL = 0.05  # seconds between two samples of a process (or a series)


@value_class
class MetricSpec:
    """A metric the user declares (``[[metrics]]`` in the experiment file): where each run's
    value comes from. It is compared like ``wall``, in the direction ``better`` says.

    - ``output``: the run's own output (``stream``: "stdout" or "stderr"), matched by
      ``pattern`` (a regular expression with a group named ``value``) or read by a built-in
      ``parser`` ("ab", "wrk", "redis-benchmark") whose ``field`` names the figure;
    - ``command``: shell code run after each run (not measured), its output a number;
    - ``file``: the size of ``path`` (a file, or a directory's files) after each run;
    - ``process``: a running process and its descendants (found by ``pid_file``,
      ``process_name`` or ``port``) sampled from /proc during each run; ``stat`` names what
      (one of PROCESS_STATS: CPU seconds used during the run, peak RSS, peak threads, peak
      open files).
    Process and file metrics are sampled every ``interval_seconds`` (None:
    DEFAULT_SAMPLE_INTERVAL) during each run; ``series`` keeps those samples with the run as a
    time series. Parsing (cutaway.spec.metrics) fills ``unit`` and ``better`` from the parser's
    field or the stat when the file does not say."""

    name: str
    source: str  # one of METRIC_SOURCES
    unit: str = "count"
    better: str = LOWER_IS_BETTER
    description: str = ""
    pattern: str | None = None
    parser: str | None = None
    field: str | None = None
    command: str | None = None
    path: str | None = None
    pid_file: str | None = None
    process_name: str | None = None
    port: int | None = None
    stat: str | None = None
    interval_seconds: float | None = None
    stream: str = "stdout"  # one of OUTPUT_STREAMS
    series: bool = False

    def metric(self) -> Metric:
        return Metric(self.name, self.unit, self.description or f"from {self.source}", self.better)

    def to_dict(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> MetricSpec:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})  # type: ignore[arg-type]


@value_class
class Spec:
    """A whole experiment, typed and validated: variants x rounds, and how to judge them.

    ``margin`` is the equivalence margin as a fraction (0.005 is +/- 0.5 %). ``until_width`` is the
    adaptive-mode target for the full width of the primary metric's confidence interval, as a
    fraction of the ratio (0.005 is 0.5 %), and ``max_time_seconds`` its budget."""

    name: str
    variants: tuple[Variant, ...]
    baseline: str
    rounds: int = 10
    warmup_rounds: int = 1
    timeout_seconds: float | None = None
    margin: float = DEFAULT_MARGIN
    confidence: float = 0.95
    until_width: float | None = None
    max_time_seconds: float | None = None
    seed: int = 0
    probes: ProbeSpec = ProbeSpec()  # frozen, so one shared default is safe
    metrics: tuple[MetricSpec, ...] = ()  # declared metrics, measured besides PROCESS_METRICS
    # [[conditions]]: every declared variant is run in each (``variants`` holds the copies,
    # named VARIANT/CONDITION); the baseline is the baseline's copy in the first condition.
    conditions: tuple[Condition, ...] = ()
    # Time commands that exit non-zero by design (grep without a match), as hyperfine's
    # --ignore-failure: such runs count as successful. Crashes and timeouts never do.
    ignore_failure: bool = False
    # Each hook's time limit: a hung setup or cleanup must not hang the experiment for ever.
    hook_timeout_seconds: float = DEFAULT_HOOK_TIMEOUT_SECONDS
    # Leave running what a measured run leaves behind (``sleep 100 &``); by default it is
    # stopped when the run ends. Either way, it is counted and reported.
    keep_leftovers: bool = False
    # The top-level tables of the experiment file that a plugin owns (a measured phase's:
    # cutaway.probes.plugin, ``phase_table``): (the table's key, its settings in their stored
    # form, a JSON value), sorted by key, unset ones left out. The plugin writes them and reads
    # them back; the store keeps them as they are, as top-level keys of the stored spec.
    plugin_tables: tuple[tuple[str, object], ...] = ()
    # The metric the user declares primary (``primary_metric``): judged at full alpha, the
    # others Holm-adjusted, and the one --until steers on. None: wall time, or the metric a
    # plugin's measured phase names (cutaway.probes.core.primary_metric).
    primary_metric: str | None = None
    # How the paired comparisons estimate a change, one of ESTIMATORS: the mean of the rounds'
    # log ratios, or their trimmed mean, which a few rounds slowed by something else do not move.
    estimator: str = "mean"
    source_path: str | None = None  # the experiment file, None in quick mode
    source_text: str | None = None  # the file exactly as given

    def __post_init__(self) -> None:
        # As ProbeSpec.settings: equal tables are equal however they were made.
        tables = sorted((kv for kv in self.plugin_tables if not unset(kv[1])), key=lambda kv: kv[0])
        object.__setattr__(self, "plugin_tables", tuple(tables))

    def plugin_table(self, key: str) -> object | None:
        """The stored form of the plugin's top-level table ``key``, None when not set."""
        return next((value for name, value in self.plugin_tables if name == key), None)

    def with_plugin_table(self, key: str, value: object) -> Spec:
        """The same experiment with the plugin's table ``key`` set to ``value`` (a JSON value;
        None: unset)."""
        others = tuple((name, old) for name, old in self.plugin_tables if name != key)
        return replace(self, plugin_tables=(*others, (key, value)))

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "variants": [v.to_dict() for v in self.variants],
            "baseline": self.baseline,
            "rounds": self.rounds,
            "warmup_rounds": self.warmup_rounds,
            "timeout_seconds": self.timeout_seconds,
            "margin": self.margin,
            "confidence": self.confidence,
            "until_width": self.until_width,
            "max_time_seconds": self.max_time_seconds,
            "seed": self.seed,
            "probes": self.probes.to_dict(),
            "metrics": [m.to_dict() for m in self.metrics],
            **({"conditions": [c.to_dict() for c in self.conditions]} if self.conditions else {}),
            "ignore_failure": self.ignore_failure,
            "hook_timeout_seconds": self.hook_timeout_seconds,
            "keep_leftovers": self.keep_leftovers,
            **dict(self.plugin_tables),
            **({"primary_metric": self.primary_metric} if self.primary_metric else {}),
            **({"estimator": self.estimator} if self.estimator != "mean" else {}),
            "source_path": self.source_path,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object], source_text: str | None = None) -> Spec:
        values = dict(data)
        variants = tuple(Variant.from_dict(v) for v in values.pop("variants"))  # type: ignore[attr-defined]
        probes = ProbeSpec.from_dict(values.pop("probes", None) or {})  # type: ignore[arg-type]
        metrics = tuple(MetricSpec.from_dict(m) for m in values.pop("metrics", None) or ())  # type: ignore[attr-defined]
        known = {f.name for f in fields(cls)}
        tables = tuple((key, values.pop(key)) for key in list(values) if key not in known)
        conditions = tuple(
            Condition(str(c["name"]), c.get("prepare"))
            for c in values.pop("conditions", None) or ()  # type: ignore[attr-defined]
        )
        return cls(
            variants=variants,
            probes=probes,
            metrics=metrics,
            conditions=conditions,
            plugin_tables=tables,
            source_text=source_text,
            **values,  # type: ignore[arg-type]
        )

    def all_metrics(
        self,
        probe_metrics: tuple[Metric, ...] = (),
        process_metrics: tuple[Metric, ...] = PROCESS_METRICS,
    ) -> tuple[Metric, ...]:
        """Every metric each run of this experiment has: ``process_metrics`` (those of a
        measured phase a plugin owns, in place of the process metrics), then
        ``probe_metrics``, those the selected probes add (measured in their own runs: the
        instructions probe's ``instructions``), then the declared ones in their order.
        cutaway.probes.core.spec_metrics asks the plugins for theirs."""
        return (*process_metrics, *probe_metrics, *(m.metric() for m in self.metrics))
