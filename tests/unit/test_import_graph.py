"""The package's modules import one another in one direction: no circle of imports, at module
level or inside a function (a lower layer that imports a higher one, even late, is a circle);
no module imports one of a higher layer (LAYERS, the layers of docs/how-it-works.md); and every
module imports on its own, first, in a fresh interpreter."""

from __future__ import annotations

import ast
import subprocess
import sys
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "src"


def _modules() -> dict[str, Path]:
    found = {}
    for path in SOURCE.rglob("*.py"):
        name = ".".join(path.relative_to(SOURCE).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports. Importing `cutaway.report.sections`
    also runs `cutaway.report` (its __init__) first, so that is an edge too, unless the importer
    is inside that package: its own package's __init__ has run before it whatever the order.
    What that edge brings in is what the __init__ runs on import: its imports inside functions
    (a renderer loaded when asked for) are not followed from there."""
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        package = name if is_package else name.rpartition(".")[0]
        for node in _import_nodes(ast.parse(path.read_text()), on_import_only=is_package):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].update(_imported_with(target, name))
    return edges


def _import_nodes(tree: ast.Module, *, on_import_only: bool) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of a module; with ``on_import_only``, those that run when it is
    imported (none inside a function's body)."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        if on_import_only and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        pending.extend(ast.iter_child_nodes(node))
    return found


def _imported_with(target: str, importer: str) -> set[str]:
    """`target` and the packages whose __init__ importing it runs, but for the importer's own
    packages (already running or run)."""
    parts = target.split(".")
    packages = {".".join(parts[:length]) for length in range(1, len(parts))}
    own = {importer.rpartition(".")[0]} | {
        ".".join(importer.split(".")[:length]) for length in range(1, importer.count(".") + 1)
    }
    return ({target} | packages) - own - {importer}


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert _circles(_edges(_modules())) == []


def test_the_check_finds_a_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(edges) == [["a", "b", "c"]]


# The layers of docs/how-it-works.md, lowest first: a module may import its own layer and the
# ones below it. A module is in the layer of the longest pattern that names it, so a probe's
# package spans layers by role: its records and capture sit with the probes, its analysis with
# the analysis, its report sections and figures with the report. A name without a wildcard
# wins over any pattern.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "values",
        (
            "cutaway",
            "cutaway.lazy_names",
            "cutaway.value_class",
            "cutaway.model*",
            # what a probe's result carries for readers that know no probe (the attribution),
            # and its package, which imports nothing
            "cutaway.attribution",
            "cutaway.attribution.result",
            "cutaway.events",
            "cutaway.visible",
            "cutaway.numeric",
            "cutaway.stats*",
            "cutaway.syscall_names",
            "cutaway.settings_reading",
            "cutaway.output_files",
            "cutaway.processes",
            "cutaway.interrupts",
            "cutaway.environment",
            "cutaway.cpu_steal",
            "cutaway.variant_environment",
            "cutaway.spans",
            "cutaway.metrics",
            "cutaway.metrics.parsers",
            "cutaway.metrics.process",
            "cutaway.metrics.sampler",
        ),
    ),
    ("store", ("cutaway.store*", "cutaway.metrics.series")),
    ("probes", ("cutaway.probes*",)),
    # with a probe's reader of its own top-level table of the file (the load plugin's [load])
    ("experiment file", ("cutaway.spec*", "cutaway.probes.*.experiment_file")),
    # versions: a variant's version is read (and its key named in the experiment file) as
    # the runner starts
    ("runner", ("cutaway.runner*", "cutaway.metrics*", "cutaway.versions")),
    (
        "analysis",
        (
            "cutaway.compare",
            "cutaway.families",
            "cutaway.verdicts",
            "cutaway.cautions",
            "cutaway.kept_analysis",
            "cutaway.history",
            "cutaway.site",
            "cutaway.attribution*",
            "cutaway.probes.*.analysis",
            "cutaway.probes.profile.flamegraph",
        ),
    ),
    (
        "report",
        (
            "cutaway.report*",
            "cutaway.attribution.sections",
            "cutaway.attribution.figures",
            "cutaway.probes.*.sections",
            "cutaway.probes.*.figures",
            # A probe's plugin joins its parts (capture, analysis, sections, figures, exports):
            # it sits with the parts it joins. The runner and the analysis read the plugins
            # through cutaway.probes.core, to which cutaway.api hands the registry's.
            "cutaway.probes.plugin",
            "cutaway.probes.registry",
            "cutaway.probes.*.plugin",
            "cutaway.probes.*.export",
        ),
    ),
    ("gate and bisection", ("cutaway.gate*", "cutaway.bisect*")),
    ("library", ("cutaway.api",)),
    ("command line", ("cutaway.cli*", "cutaway.__main__")),
)


def _layer(module: str) -> int:
    """The index in LAYERS of the pattern naming ``module``: its own name, else the longest
    pattern that matches it."""
    matches = [
        ("*" not in pattern, len(pattern), index)
        for index, (_, patterns) in enumerate(LAYERS)
        for pattern in patterns
        if fnmatchcase(module, pattern)
    ]
    assert matches, f"{module} is in no layer of LAYERS"
    return max(matches)[2]


def _upward(edges: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} ({LAYERS[_layer(module)][0]}) imports {target} ({LAYERS[_layer(target)][0]})"
        for module, targets in edges.items()
        for target in targets
        if _layer(target) > _layer(module)
    )


# Upward imports still there, each with what removing it takes: none. The test fails on any
# new one, and on one listed here once it is gone (delete its line then).
KNOWN_UPWARD: set[str] = set()


def test_no_module_imports_one_of_a_higher_layer() -> None:
    assert sorted(set(_upward(_edges(_modules()))) ^ KNOWN_UPWARD) == []


def test_the_check_finds_an_upward_import() -> None:
    edges = {"cutaway.store.db": {"cutaway.report.units"}, "cutaway.cli.main": {"cutaway.model"}}
    assert _upward(edges) == ["cutaway.store.db (store) imports cutaway.report.units (report)"]


# Imports each module named on the command line in a fork of an interpreter that has imported
# nothing of cutaway, so each is the first of the package to be imported (as a fresh
# interpreter would, at a fraction of the cost: the third-party packages most modules use are
# imported once, before the forks); prints each failure's last line.
IMPORT_FIRST = """
import importlib, os, sys, traceback
for package in ("numpy", "scipy.stats", "rich.console"):
    try:
        importlib.import_module(package)
    except ImportError:
        pass
assert not [name for name in sys.modules if name.startswith("cutaway")]
for name in sys.argv[1:]:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            importlib.import_module(name)
        except BaseException:
            os.write(write_end, traceback.format_exc().strip().splitlines()[-1].encode())
            os._exit(1)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        message = reader.read().decode()
    os.waitpid(pid, 0)
    if message:
        print(f"{name}: {message}")
"""


def _failing_first_imports(names: list[str]) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_FIRST, *names],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return result.stdout.splitlines()


@pytest.mark.slow
def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    """A circle through a package's __init__ shows only when the module in it is the first one
    imported: importing cutaway.attribution.sections first ran cutaway.report, which imported
    it back half-made."""
    names = sorted(name for name in _modules() if name != "cutaway.__main__")
    assert _failing_first_imports(names) == []


def test_the_fresh_import_check_reports_a_failure() -> None:
    assert _failing_first_imports(["cutaway.model", "cutaway.no_such_module"]) == [
        "cutaway.no_such_module: ModuleNotFoundError: No module named 'cutaway.no_such_module'"
    ]
