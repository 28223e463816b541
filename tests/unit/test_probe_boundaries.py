"""A probe lives in its package: no module outside it imports it, but the registry
(cutaway.probes.registry), which lists every probe's plugin. The probes not yet moved wholly
into their packages are listed with the modules that still import them, so that the count can
only go down: a new importer fails here, and so does one that is gone (update the list). And
the core names no probe's table: the load phase's [load] is its plugin's alone."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "cutaway"
REGISTRY = "cutaway.probes.registry"

# Probes still imported outside their package, with the modules that import them (besides the
# registry): none. What more than one probe stores or uses is outside every probe, in the probes
# layer: the stacks of the profile and instructions probes (cutaway.probes.stacks), the call
# interposer's files (cutaway.probes.interposer) and the timed calls of the calls and syscalls
# probes (cutaway.probes.timed_calls), the spans and phase tables of the spans and uprobes
# probes (cutaway.probes.span_model, cutaway.probes.phase_tables).
NOT_YET_MOVED: dict[str, set[str]] = {}


def _probes() -> list[str]:
    return sorted(
        path.name
        for path in (PACKAGE / "probes").iterdir()
        if path.is_dir() and (path / "__init__.py").exists()
    )


@functools.cache
def _imports() -> dict[str, frozenset[str]]:
    """Every module of the package -> the names it imports, at any level of the module."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.update([node.module, *(f"{node.module}.{a.name}" for a in node.names)])
        found[module.removesuffix(".__init__")] = frozenset(names)
    return found


def _importers(probe: str) -> set[str]:
    """Modules outside ``cutaway.probes.<probe>`` that import it."""
    prefix = f"cutaway.probes.{probe}"

    def inside(name: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    return {
        module
        for module, names in _imports().items()
        if not inside(module) and any(inside(name) for name in names)
    } - {REGISTRY}


def test_every_probe_is_registered() -> None:
    registry = (PACKAGE / "probes" / "registry.py").read_text()
    for probe in _probes():
        assert f"cutaway.probes.{probe}.plugin import" in registry, probe


def test_a_moved_probe_is_imported_by_no_module_outside_its_package() -> None:
    for probe in _probes():
        importers = _importers(probe)
        assert importers == NOT_YET_MOVED.get(probe, set()), (
            f"cutaway.probes.{probe} is imported outside its package and the registry by "
            f"{sorted(importers)}; expected {sorted(NOT_YET_MOVED.get(probe, set()))}"
        )


def test_the_moved_probes_are_the_ones_said() -> None:
    moved = [probe for probe in _probes() if probe not in NOT_YET_MOVED]
    assert moved == ["calls", "instructions", "load", "profile", "spans", "syscalls", "uprobes"]


# The core: every module of cutaway outside its probes' packages (cutaway.probes), and outside
# the library module that hands the core its plugins.
CORE_EXCLUDED = ("cutaway.probes", "cutaway.api")


def _core_naming(words_of: Callable[[Path, str], set[str]]) -> dict[str, list[str]]:
    """Every core module (the package but CORE_EXCLUDED) whose ``words_of(path, module)`` is
    not empty, with those words."""
    named = {}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        if not module.startswith(CORE_EXCLUDED):
            words = words_of(path, module)
            if words:
                named[module] = sorted(words)
    return named


# Strings of the core that say "load" but mean something else, with what they mean.
CORE_LOAD_WORDS: dict[str, set[str]] = {
    "cutaway.cautions": {"load"},  # the caution of a busy machine (its load average)
}
# Modules whose `.load` is a reader of a file format, not a spec's load phase.
FILE_READERS = {"json", "tomllib"}
# The load phase's types and readers (cutaway.probes.load.settings, .experiment_file).
LOAD_NAMES = ("LoadSpec", "LoadTarget", "load_settings", "quick_load")


def _is_docstring(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    parent = parents.get(node)
    owner = parents.get(parent) if isinstance(parent, ast.Expr) else None
    return isinstance(owner, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)


def _load_names(path: Path) -> set[str]:
    """What a module's code (not its docstrings and comments) says of a load phase: a string
    ``load``, ``[load]``, ``cw_load`` or ``--url``, an attribute ``.load`` (``spec.load``) or
    ``args.url``, a name of the load phase's types and readers."""
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if not _is_docstring(node, parents) and (
                text == "load" or any(word in text for word in ("[load]", "cw_load", "--url"))
            ):
                found.add(text)
        elif isinstance(node, ast.Attribute) and node.attr == "load":
            if not (isinstance(node.value, ast.Name) and node.value.id in FILE_READERS):
                found.add(".load")
        elif isinstance(node, ast.Attribute) and node.attr == "url":
            if isinstance(node.value, ast.Name) and node.value.id == "args":
                found.add(".url")
        elif isinstance(node, ast.Name | ast.alias):
            name = node.id if isinstance(node, ast.Name) else node.asname or node.name
            if any(word in name for word in LOAD_NAMES):
                found.add(name)
    return found


def test_the_core_names_no_load_phase() -> None:
    """The [load] table, its keys, its settings and its quick mode are the load plugin's: the
    core (spec, model, runner, compare, report, cli, store ...) asks the plugins for them."""
    found = _core_naming(
        lambda path, module: _load_names(path) - CORE_LOAD_WORDS.get(module, set())
    )
    assert found == {}


def test_the_load_check_finds_a_load_phase(tmp_path: Path) -> None:
    source = tmp_path / "core.py"
    source.write_text(
        '"""Docstrings may say "load" and [load]."""\n'
        "import json\n"
        "from cutaway.probes.load.settings import LoadSpec\n"
        "json.load(open('x'))\n"
        "def f(spec, document, args):\n"
        '    """So may [load] here."""\n'
        "    return spec.load, document['load'], ('cw_load',), args.url\n"
    )
    assert _load_names(source) == {"LoadSpec", ".load", "load", "cw_load", ".url"}


# The metrics a probe stores are its plugin's (ProbePlugin.known_metrics): the core reads them
# through cutaway.probes.core (known_metrics, reserved_metric_names, stack_metrics), and the
# gate judges a metric flagged deterministic, none by name. These names held them in the core.
PROBE_METRIC_NAMES = (
    "LOAD_METRICS",
    "CONNECT_METRICS",
    "SERVER_METRICS",
    "GENERATOR_METRICS",
    "INSTRUCTIONS_METRIC",
    "KNOWN_METRICS",  # the process metrics with every probe's
    "METRICS_BY_NAME",  # the process metrics with the instructions probe's
)
# Strings of the core equal to a probe's metric name that mean something else, with what.
CORE_METRIC_WORDS: dict[str, set[str]] = {
    "cutaway.attribution.sections": {"instructions"},  # a kind of stacks and its unit
    "cutaway.gate.where": {"instructions"},  # a kind of stacks (cutaway.probes.stacks)
}


def _probe_metric_names() -> frozenset[str]:
    from cutaway.probes.registry import plugins

    return frozenset(m.name for plugin in plugins() for m in plugin.known_metrics)


def _metric_names(path: Path, metric_names: frozenset[str]) -> set[str]:
    """What a module's code (not its docstrings and comments) says of a probe's metrics: a name
    of PROBE_METRIC_NAMES (imported, or an attribute: ``model.LOAD_METRICS``), or a string that
    is one of ``metric_names``."""
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in metric_names and not _is_docstring(node, parents):
                found.add(node.value)
        elif isinstance(node, ast.Name):
            found.update({node.id} & set(PROBE_METRIC_NAMES))
        elif isinstance(node, ast.Attribute):
            found.update({node.attr} & set(PROBE_METRIC_NAMES))
        elif isinstance(node, ast.alias):
            found.update({node.name, node.asname or ""} & set(PROBE_METRIC_NAMES))
    return found


def test_the_core_names_no_probes_metric() -> None:
    """The load phase's and the instructions probe's metrics are their plugins': the core (model,
    spec, compare, the gate, bisect, the reports ...) asks the plugins for them."""
    metric_names = _probe_metric_names()
    assert {"throughput", "server_cpu", "instructions"} <= metric_names
    found = _core_naming(
        lambda path, module: (
            _metric_names(path, metric_names) - CORE_METRIC_WORDS.get(module, set())
        )
    )
    assert found == {}


def test_the_metric_check_finds_a_probes_metric(tmp_path: Path) -> None:
    source = tmp_path / "core.py"
    source.write_text(
        '"""Docstrings may say "throughput" and LOAD_METRICS."""\n'
        "from cutaway.model import INSTRUCTIONS_METRIC as counted\n"
        "import cutaway.model\n"
        "def f(metrics):\n"
        '    """So may "instructions" here."""\n'
        "    return cutaway.model.LOAD_METRICS, metrics['server_cpu'], 'wall'\n"
    )
    found = _metric_names(source, frozenset({"server_cpu", "instructions", "throughput"}))
    assert found == {"INSTRUCTIONS_METRIC", "LOAD_METRICS", "server_cpu"}
