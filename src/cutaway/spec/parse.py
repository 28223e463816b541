"""The experiment file (TOML, format version 1) -> a validated :class:`~cutaway.model.Spec`.

The format is documented key by key in docs/experiment-file.md, with its version history.
Every problem raises one :class:`SpecError` naming the file, line and key; a typo is never
silently ignored, so unknown keys are errors everywhere.

Its length: the top level and the variants (commands, hooks, streams, versions, matrix
templates, a plugin's per-variant keys) are one reader, each key's check next to the message
it gives; the values' readers (``fields``), the matrix, conditions and metrics are modules of
their own.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cutaway.model import (
    DEFAULT_HOOK_TIMEOUT_SECONDS,
    DEFAULT_MARGIN,
    VERSION_KEYS,
    Hooks,
    ProbeSpec,
    Spec,
    Variant,
    VersionSource,
)
from cutaway.probes.core import PhaseTable, phase_tables
from cutaway.spec import fields
from cutaway.spec.command import command_for
from cutaway.spec.conditions import apply_conditions, conditioned_baseline, read_conditions
from cutaway.spec.errors import KeyPath, SpecError, describe, expected, format_key
from cutaway.spec.locate import find_line
from cutaway.spec.matrix import (
    DEFAULT_MAX_VARIANTS,
    VariantTemplate,
    expand,
    read_matrix,
    substitute,
)
from cutaway.spec.metrics import check_primary_metric, read_metrics
from cutaway.spec.probes import read_probes

FORMAT_VERSION = 1
EXPERIMENT_DIR_VARIABLE = "CUTAWAY_EXPERIMENT_DIR"
TOP_LEVEL_KEYS = (
    "version",
    "name",
    "command",
    "shell",
    "rounds",
    "warmup_rounds",
    "timeout",
    "hook_timeout",
    "baseline",
    "margin",
    "primary_metric",
    "estimator",
    "confidence",
    "until",
    "max_time",
    "max_variants",
    "seed",
    "ignore_failure",
    "keep_leftovers",
    "input",
    "output",
    "matrix",
    "variants",
    "probes",
    "metrics",
)
# After the plugins' top-level tables (a measured phase's, cutaway.probes.core.PhaseTable).
LATE_TOP_LEVEL_KEYS = (
    "check",  # what `cutaway check` fails on; read by cutaway.gate.rules, ignored by `run`
    "conditions",
)
HOOK_NAMES = ("setup", "prepare", "conclude", "cleanup")
VARIANT_KEYS = ("name", "command", "shell", "env", "cwd", "input", "output", *HOOK_NAMES)
SHELL_HINT = "set shell = true to run it with /bin/sh -c"

_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_AT_END = re.compile(r"\s*\(at end of document\)\s*$")


@dataclass(frozen=True)
class _Settings:
    """The top-level keys that apply to the whole experiment."""

    rounds: int
    warmup_rounds: int
    timeout_seconds: float | None
    hook_timeout_seconds: float
    margin: float
    confidence: float
    until_width: float | None
    max_time_seconds: float | None
    seed: int
    ignore_failure: bool
    keep_leftovers: bool
    estimator: str


def load_spec(path: str | os.PathLike[str], *, max_variants: int | None = None) -> Spec:
    """Read and validate an experiment file. Every problem, a missing file included, raises
    :class:`SpecError`. ``max_variants`` (``--max-variants``) overrides the file's limit on
    the number of variants its matrix may make."""
    if max_variants is not None:
        fields.read_max_variants(max_variants, ("--max-variants",))
    path_text = os.fspath(path)
    try:
        with open(path_text, "rb") as file:
            data = file.read()
    except FileNotFoundError:
        raise SpecError("no such file", path=path_text) from None
    except IsADirectoryError:
        raise SpecError("is a directory, not an experiment file", path=path_text) from None
    except OSError as error:
        raise SpecError(f"cannot read: {error.strerror or error}", path=path_text) from None
    except ValueError as error:  # a NUL byte in the path
        raise SpecError(f"cannot read: {error}", path=path_text) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        message = f"not UTF-8 text (invalid byte at offset {error.start})"
        raise SpecError(message, path=path_text) from None
    spec = parse_spec(text, path_text, max_variants=max_variants)
    return _with_experiment_dir(spec, path_text)


def _with_experiment_dir(spec: Spec, path: str) -> Spec:
    """Give every variant ``CUTAWAY_EXPERIMENT_DIR``, the experiment file's directory, so that
    hooks and commands can name files that sit beside it wherever cutaway is started from; a
    relative ``version_from`` is taken from that directory too."""
    directory = os.path.dirname(os.path.abspath(path))
    variants = tuple(
        dataclasses.replace(
            v,
            env={EXPERIMENT_DIR_VARIABLE: directory, **v.env},
            version=_version_beside(v.version, directory),
        )
        for v in spec.variants
    )
    return dataclasses.replace(spec, variants=variants)


def _version_beside(version: VersionSource | None, directory: str) -> VersionSource | None:
    if version is None or version.key != "version_from":
        return version
    return dataclasses.replace(
        version, text=os.path.normpath(os.path.join(directory, version.text))
    )


def parse_spec(text: str, path: str | None = None, *, max_variants: int | None = None) -> Spec:
    """Validate the text of an experiment file; ``path`` is only used in messages and kept in
    ``Spec.source_path``; ``max_variants``, when given, wins over the file's key."""
    try:
        return _spec_from_document(_decode_toml(text), text, path, max_variants)
    except SpecError as error:
        line = error.line
        if line is None and error.key_path is not None:
            line = find_line(text, error.key_path)
        raise error.located(path, line) from None


def _decode_toml(text: str) -> dict[str, object]:
    # Imported here: an experiment given on the command line has no file (tomllib: 5 ms).
    import tomllib

    try:
        # A byte-order mark is not TOML, but editors on some systems write one.
        return tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        position = _TOML_POSITION.search(message)
        if position is not None:
            column = position.group(2)
            message = f"{message[: position.start()]} (column {column})"
            line: int | None = int(position.group(1))
        elif _TOML_AT_END.search(message) is not None:
            message = f"{_TOML_AT_END.sub('', message)} (at the end of the file)"
            line = max(1, len(text.splitlines()))
        else:
            line = None
        raise SpecError(f"invalid TOML: {message}", line=line) from None
    except RecursionError:
        raise SpecError("invalid TOML: arrays or tables nested too deeply") from None
    except ValueError:  # Python's own limit on the digits of an integer (4300)
        raise SpecError("invalid TOML: an integer with thousands of digits") from None


def _spec_from_document(
    document: Mapping[str, object], text: str, path: str | None, max_variants: int | None
) -> Spec:
    version = document.get("version", FORMAT_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version != FORMAT_VERSION:
        message = f"unsupported version {describe(version)} (this cutaway reads version 1)"
        if isinstance(version, str):
            message += (
                "; the top-level version is the file format's: the version of what a variant "
                "runs is its own version key in [[variants]], or `cutaway run --label`"
            )
        raise SpecError(message, key_path=("version",))
    tables = phase_tables()
    top_level_keys = (*TOP_LEVEL_KEYS, *(table.key for table in tables), *LATE_TOP_LEVEL_KEYS)
    variant_keys = (
        *VARIANT_KEYS, *(key for table in tables for key in table.variant_keys), *VERSION_KEYS
    )  # fmt: skip
    _check_keys(document, top_level_keys, (), variant_keys, "in [[variants]]")
    if "name" not in document:
        raise SpecError("missing required key (the experiment's name)", key_path=("name",))
    name = fields.read_string(document["name"], ("name",))
    settings = _read_settings(document)
    # A plugin's table makes every run its measured phase: one per experiment.
    given = [table for table in tables if table.key in document]
    if len(given) > 1:
        message = f"give one of [{given[0].key}] and [{given[1].key}]: each runs every run"
        raise SpecError(message, key_path=(given[1].key,))
    table = given[0] if given else None
    phase_settings: object = None
    if table is not None:
        phase_settings = table.read(document[table.key], (table.key,))
        _refuse_commands(document, table)
    templates, variants = _read_variants(
        document, name, max_variants, variant_keys, None if table is None else table.program
    )
    if table is not None:
        entries = _variant_entries(document, table, templates)
        phase_settings, variants = table.with_variants(phase_settings, variants, entries)
    for other in tables:
        if other is not table:
            _refuse_variant_keys(document, other)
    names = [variant.name for variant in variants]
    baseline = names[0]
    if "baseline" in document:
        baseline = fields.read_string(document["baseline"], ("baseline",))
        if baseline not in names:
            valid = ", ".join(describe(known) for known in names)
            message = f"no variant is named {describe(baseline)} (variants: {valid})"
            raise SpecError(message, key_path=("baseline",))
    conditions = read_conditions(document["conditions"]) if "conditions" in document else ()
    if conditions:
        variants = apply_conditions(variants, conditions)
        baseline = conditioned_baseline(baseline, conditions)
        if table is not None:
            phase_settings = table.conditioned(phase_settings, variants)
    spec = Spec(
        name=name,
        variants=variants,
        baseline=baseline,
        rounds=settings.rounds,
        warmup_rounds=settings.warmup_rounds,
        timeout_seconds=settings.timeout_seconds,
        hook_timeout_seconds=settings.hook_timeout_seconds,
        margin=settings.margin,
        confidence=settings.confidence,
        until_width=settings.until_width,
        max_time_seconds=settings.max_time_seconds,
        seed=settings.seed,
        ignore_failure=settings.ignore_failure,
        keep_leftovers=settings.keep_leftovers,
        estimator=settings.estimator,
        probes=read_probes(document["probes"]) if "probes" in document else ProbeSpec(),
        metrics=read_metrics(document["metrics"]) if "metrics" in document else (),
        conditions=conditions,
        plugin_tables=() if table is None else ((table.key, phase_settings),),
        primary_metric=(
            fields.read_string(document["primary_metric"], ("primary_metric",))
            if "primary_metric" in document
            else None
        ),
        source_path=path,
        source_text=text,
    )
    if table is not None:
        table.check(spec)
    check_primary_metric(spec, ("primary_metric",))
    return spec


def _read_settings(document: Mapping[str, object]) -> _Settings:
    def optional(key: str, read: fields.Reader[fields.T], default: fields.T) -> fields.T:
        return read(document[key], (key,)) if key in document else default

    return _Settings(
        rounds=optional("rounds", fields.read_rounds, 10),
        warmup_rounds=optional("warmup_rounds", fields.read_warmup_rounds, 1),
        timeout_seconds=optional("timeout", fields.read_run_timeout, None),
        hook_timeout_seconds=optional(
            "hook_timeout", fields.read_hook_timeout, DEFAULT_HOOK_TIMEOUT_SECONDS
        ),
        margin=optional("margin", fields.read_margin, DEFAULT_MARGIN),
        confidence=optional("confidence", fields.read_confidence, 0.95),
        until_width=optional("until", fields.read_until_width, None),
        max_time_seconds=optional("max_time", fields.read_max_time, None),
        seed=optional("seed", fields.read_seed, fields.fresh_seed()),
        ignore_failure=optional("ignore_failure", fields.read_bool, False),
        keep_leftovers=optional("keep_leftovers", fields.read_bool, False),
        estimator=optional("estimator", fields.read_estimator, "mean"),
    )


def _refuse_commands(document: Mapping[str, object], table: PhaseTable) -> None:
    """The runs of an experiment with a plugin's table are its measured phase: a command would
    not run."""
    message = f"a {table.key} experiment ([{table.key}]) has no command: {table.no_command}"
    if "command" in document:
        raise SpecError(message, key_path=("command",))
    variants = document.get("variants")
    for index, found in enumerate(variants if isinstance(variants, list) else ()):
        if isinstance(found, dict) and "command" in found:
            raise SpecError(message, key_path=("variants", index, "command"))


def _refuse_variant_keys(document: Mapping[str, object], table: PhaseTable) -> None:
    """A plugin table's per-variant keys in an experiment without that table."""
    variants = document.get("variants")
    for index, found in enumerate(variants if isinstance(variants, list) else ()):
        for key in table.variant_keys:
            if isinstance(found, dict) and key in found:
                message = f"{key} belongs to a {table.key} experiment: add a [{table.key}] section"
                raise SpecError(message, key_path=("variants", index, key))


@dataclass(frozen=True)
class _VariantEntry:
    """A variant's per-variant keys of a plugin's table (cutaway.probes.core.VariantEntry):
    its own table's, else the plugin table's, read when the plugin asks for them."""

    key_path: KeyPath
    own: Mapping[str, object]
    table_key: str
    table: Mapping[str, object]
    params: Mapping[str, str]

    def text(self, key: str) -> tuple[str, KeyPath] | None:
        where: KeyPath
        if key in self.own:
            raw, where = self.own[key], (*self.key_path, key)
        elif key in self.table:
            raw, where = self.table[key], (self.table_key, key)
        else:
            return None
        return substitute(fields.read_string(raw, where), self.params, where), where


def _variant_entries(
    document: Mapping[str, object], table: PhaseTable, templates: Sequence[VariantTemplate]
) -> list[_VariantEntry]:
    tables = _variant_tables(document["variants"]) if "variants" in document else []
    phase_table = document[table.key]
    return [
        _VariantEntry(
            key_path=template.key_path,
            own=tables[int(template.key_path[1])] if len(template.key_path) == 2 else {},
            table_key=table.key,
            table=phase_table if isinstance(phase_table, Mapping) else {},
            params=template.params,
        )
        for template in templates
    ]


def _read_variants(
    document: Mapping[str, object],
    experiment_name: str,
    max_variants: int | None,
    variant_keys: Sequence[str],
    program: str | None,
) -> tuple[list[VariantTemplate], tuple[Variant, ...]]:
    """The variants as declared; ``program``: the command of each (a plugin's measured phase,
    which gives each its arguments), None for their own."""
    shell = fields.read_bool(document["shell"], ("shell",)) if "shell" in document else False
    top_command: str | tuple[str, ...] | None = None if program is None else (program,)
    if "command" in document:
        top_command = fields.read_command(document["command"], ("command",))
    matrix = read_matrix(document["matrix"]) if "matrix" in document else {}
    streams = _Streams.read(document, (), _Streams())
    if "variants" in document:
        tables = _variant_tables(document["variants"])
        templates = [
            _read_variant(table, index, variant_keys, top_command, shell, bool(matrix), streams)
            for index, table in enumerate(tables)
        ]
    elif top_command is None:
        raise SpecError("no command: set command, or declare [[variants]]", key_path=("command",))
    else:
        # Without [[variants]], one implicit variant runs the top-level command. Under a matrix
        # it is named by its parameters alone; otherwise by the experiment.
        implicit = VariantTemplate(
            key_path=(),
            name=None if matrix else experiment_name,
            command=top_command,
            command_key_path=("command",),
            shell=shell,
            **streams.fields(),
        )
        templates = [implicit]
    limit, how_to_raise = DEFAULT_MAX_VARIANTS, "max_variants (or --max-variants)"
    if "max_variants" in document:
        limit = fields.read_max_variants(document["max_variants"], ("max_variants",))
    if max_variants is not None:
        limit, how_to_raise = max_variants, "--max-variants"
    expanded = expand(templates, matrix, max_variants=limit, how_to_raise=how_to_raise)
    _check_unique_names(expanded)
    variants = tuple(_build_variant(template) for template in expanded)
    fields.check_input_is_no_output(
        [
            (v.stdin, t.stdin_key_path)
            for t, v in zip(expanded, variants, strict=True)
            if v.stdin is not None
        ],
        [(v.name, v.stdout) for v in variants],
    )
    return expanded, variants


def _variant_tables(value: object) -> list[dict[str, object]]:
    if not isinstance(value, list) or not all(isinstance(table, dict) for table in value):
        raise expected("an array of tables ([[variants]])", value, ("variants",))
    if not value:
        raise expected("at least one variant", value, ("variants",))
    return value


def _read_variant(
    table: Mapping[str, object],
    index: int,
    variant_keys: Sequence[str],
    top_command: str | tuple[str, ...] | None,
    top_shell: bool,
    has_matrix: bool,
    top_streams: _Streams,
) -> VariantTemplate:
    key_path: KeyPath = ("variants", index)
    top_level_keys = (*TOP_LEVEL_KEYS, *(t.key for t in phase_tables()), *LATE_TOP_LEVEL_KEYS)
    _check_keys(table, variant_keys, key_path, top_level_keys, "at the top level")
    name = None
    if "name" in table:
        name = fields.read_string(table["name"], (*key_path, "name"))
    elif not has_matrix:
        raise SpecError("missing required key (the variant's name)", key_path=(*key_path, "name"))
    if "command" in table:
        command = fields.read_command(table["command"], (*key_path, "command"))
        command_key_path: KeyPath = (*key_path, "command")
    elif top_command is not None:
        command, command_key_path = top_command, ("command",)
    else:
        message = "no command: give this variant a command, or set a top-level command"
        raise SpecError(message, key_path=(*key_path, "command"))
    shell = top_shell
    if "shell" in table:
        shell = fields.read_bool(table["shell"], (*key_path, "shell"))
    hooks: dict[str, str] = {}
    for hook in HOOK_NAMES:
        code = fields.read_hook(table[hook], (*key_path, hook)) if hook in table else None
        if code is not None:
            hooks[hook] = code
    return VariantTemplate(
        key_path=key_path,
        name=name,
        command=command,
        command_key_path=command_key_path,
        shell=shell,
        env=fields.read_env(table["env"], (*key_path, "env")) if "env" in table else {},
        cwd=fields.read_path(table["cwd"], (*key_path, "cwd")) if "cwd" in table else None,
        hooks=hooks,
        **_Streams.read(table, key_path, top_streams).fields(),
        version=_read_version(table, key_path),
    )


def _read_version(table: Mapping[str, object], key_path: KeyPath) -> VersionSource | None:
    """The variant's own version: at most one of ``version`` (the text), ``version_from`` (a
    directory, relative to the experiment file) and ``version_command`` (shell code)."""
    given = [key for key in VERSION_KEYS if key in table]
    if not given:
        return None
    if len(given) > 1:
        message = f"give one of {', '.join(given)}, not {len(given)}: each sets the version"
        raise SpecError(message, key_path=(*key_path, given[1]))
    key = given[0]
    where: KeyPath = (*key_path, key)
    text = fields.read_text_without_nul(fields.read_string(table[key], where), where)
    return VersionSource(key, text.strip() if key == "version" else text, where)


@dataclass(frozen=True)
class _Streams:
    """A variant's ``input`` and ``output`` as written, with where each was written: its own
    key, or the top-level one it inherits."""

    stdin: str | None = None
    stdin_key_path: KeyPath = ()
    stdout: str | None = None
    stdout_key_path: KeyPath = ()

    @classmethod
    def read(cls, table: Mapping[str, object], key_path: KeyPath, inherited: _Streams) -> _Streams:
        streams = inherited
        if "input" in table:
            where: KeyPath = (*key_path, "input")
            streams = dataclasses.replace(
                streams, stdin=fields.read_string(table["input"], where), stdin_key_path=where
            )
        if "output" in table:
            where = (*key_path, "output")
            streams = dataclasses.replace(
                streams, stdout=fields.read_string(table["output"], where), stdout_key_path=where
            )
        return streams

    def fields(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def _check_keys(
    table: Mapping[str, object],
    allowed: Sequence[str],
    key_path: KeyPath,
    other_level_keys: Sequence[str],
    other_level: str,
) -> None:
    for key in table:
        if key in allowed:
            continue
        import difflib  # for a mistyped key only

        close = difflib.get_close_matches(key, allowed, n=1)
        if key in other_level_keys:
            message = f"unknown key here ({key} belongs {other_level})"
        elif close:
            message = f"unknown key (did you mean {close[0]!r}?)"
        else:
            message = f"unknown key (known keys: {', '.join(allowed)})"
        raise SpecError(message, key_path=(*key_path, key))


def _check_unique_names(templates: Sequence[VariantTemplate]) -> None:
    first_by_name: dict[str, VariantTemplate] = {}
    for template in templates:
        assert template.name is not None  # every template is named once expanded
        first = first_by_name.setdefault(template.name, template)
        if first is not template:
            where = format_key(first.key_path) or "the implicit variant"
            message = f"duplicate variant name {describe(template.name)} (also {where})"
            raise SpecError(message, key_path=(*template.key_path, "name"))


def _build_variant(template: VariantTemplate) -> Variant:
    assert template.name is not None
    command = command_for(
        template.command,
        shell=template.shell,
        key_path=template.command_key_path,
        shell_hint=SHELL_HINT,
    )
    stdin = None
    if template.stdin is not None:
        stdin = fields.read_input(template.stdin, template.stdin_key_path, template.cwd)
    stdout = "null"
    if template.stdout is not None:
        stdout = fields.read_output(template.stdout, template.stdout_key_path, template.cwd)
    return Variant(
        name=template.name,
        command=command,
        shell=template.shell,
        env=template.env,
        cwd=template.cwd,
        hooks=Hooks(**template.hooks),
        params=template.params,
        stdin=stdin,
        stdout=stdout,
        version=template.version,
    )
