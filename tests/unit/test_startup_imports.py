"""Light commands start at once: `cutaway --version`, `--help` and `list` import neither scipy
nor numpy nor rich, nor psycopg, which only a postgresql:// store needs.
Each case runs in a fresh interpreter, since this test process has long imported them."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cutaway.model import Run, RunStatus, Spec, Variant
from cutaway.store import Store

HEAVY = ("scipy", "numpy", "rich", "psycopg")

# Runs main(argv) and prints which heavy packages it left in sys.modules; argparse's --version
# and --help end with SystemExit(0), which is their normal exit.
PROBE = """
import contextlib, io, json, sys
argv = json.loads(sys.argv[1])
from cutaway.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        status = main(argv) if argv is not None else 0
    except SystemExit as exit:
        status = exit.code
heavy = sorted({name.partition(".")[0] for name in sys.modules} & set(json.loads(sys.argv[2])))
print(json.dumps({"status": status, "heavy": heavy}))
"""


def imported_by(argv: list[str] | None) -> tuple[object, list[str]]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        check=True,
    )
    outcome = json.loads(result.stdout)
    return outcome["status"], outcome["heavy"]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store with one experiment and one run, so that `list` prints a row."""
    path = tmp_path / "cutaway.db"
    spec = Spec(
        name="startup",
        variants=(Variant(name="a", command=("true",)), Variant(name="b", command=("false",))),
        baseline="a",
        rounds=1,
    )
    with Store(path) as store:
        experiment_id = store.create_experiment(spec, {}, None, "test")
        store.add_run(
            experiment_id,
            Run("a", 0, 0, RunStatus.OK, 0, None, {"wall": 0.001}, started_at=0.0),
        )
    return path


def test_importing_the_cli_imports_nothing_heavy() -> None:
    assert imported_by(None) == (0, [])


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["report", "--help"]])
def test_version_and_help_import_nothing_heavy(argv: list[str]) -> None:
    assert imported_by(argv) == (0, [])


def modules_after(argv: list[str]) -> set[str]:
    """Every module in sys.modules after the entry point answered argv, in a fresh
    interpreter (on a wide terminal, where --help is answered without the parser)."""
    code = (
        "import contextlib, io, sys\nfrom cutaway.cli.main import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n    main({argv!r})\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
        check=True,
    )
    return set(result.stderr.split())


# Each costs a light command a good part of the interpreter's own start: argparse
# (which brings re, gettext), re, typing, pathlib, shutil, dataclasses (with inspect), enum;
# and the model's dozens of dataclasses.
COSTLY = ("argparse", "re", "typing", "pathlib", "shutil", "dataclasses", "inspect", "enum")


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_version_and_help_import_only_the_entry_point(argv: list[str]) -> None:
    modules = modules_after(argv)
    assert sorted(n for n in modules if n.startswith("cutaway")) == [
        "cutaway",
        "cutaway.cli",
        "cutaway.cli.listing",  # the default store: os only
        "cutaway.cli.main",
    ]
    assert not modules & set(COSTLY)
    assert "sqlite3" not in modules


def test_list_imports_only_sqlite_and_the_listing(db: Path) -> None:
    modules = modules_after(["list", "--db", str(db)])
    assert sorted(n for n in modules if n.startswith("cutaway")) == [
        "cutaway",
        "cutaway.cli",
        "cutaway.cli.listing",
        "cutaway.cli.main",
        "cutaway.store",
        "cutaway.store.listing",
        "cutaway.store.schema",
        "cutaway.visible",  # a translation table: names are shown with control characters escaped
    ]
    assert not modules & set(COSTLY)
    assert not {"psycopg", "cutaway.store.postgresql", "cutaway.store.location"} & modules


def test_a_sqlite_store_imports_no_postgresql(db: Path) -> None:
    """Every command on an SQLite store: psycopg is imported for a postgresql:// URL only."""
    code = (
        "import sys\nfrom cutaway.store import Store\n"
        f"Store({str(db)!r}, create=False).list_experiments()\n"
        "import cutaway.cli.commands, cutaway.runner.runner\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    modules = set(result.stdout.split())
    assert "cutaway.store.db" in modules
    assert not {"psycopg", "cutaway.store.postgresql"} & modules


def test_the_runner_imports_no_analysis() -> None:
    """`cutaway run` imports numpy, the statistics and the reports after the runs, never
    before or during them: the runner, the progress display and a probe-less experiment's
    modules must not import them. rich is the report's: the progress bar is drawn without it,
    so a terminal user's first run does not wait for it either."""
    code = (
        "import sys\n"
        "import cutaway.cli.commands, cutaway.cli.progress, cutaway.runner.calibration\n"
        "import cutaway.runner.runner, cutaway.environment, cutaway.spec, cutaway.store.db\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    modules = set(result.stdout.split())
    assert not {"numpy", "scipy", "rich", "cutaway.compare", "cutaway.stats"} & modules


def test_a_quick_run_imports_no_module_it_does_not_use(tmp_path: Path) -> None:
    """`cutaway run -c true` hands the core its probes itself, without cutaway.api (the
    library: a module and a dataclass more), and declares no metric: the output parsers (their
    patterns and dataclasses) are imported for an output metric only."""
    db = tmp_path / "run.db"
    modules = modules_after(["run", "-c", "true", "--rounds", "1", "-q", "--db", str(db)])
    assert "cutaway.runner.runner" in modules  # it ran
    assert not {"cutaway.api", "cutaway.metrics.parsers"} & modules


def test_list_imports_nothing_heavy(db: Path) -> None:
    assert imported_by(["list", "--db", str(db)]) == (0, [])


def test_list_of_an_empty_store_imports_nothing_heavy(tmp_path: Path) -> None:
    Store(tmp_path / "empty.db").close()
    assert imported_by(["list", "--db", str(tmp_path / "empty.db")]) == (0, [])


def test_the_light_modules_import_nothing_heavy() -> None:
    """The library's own entry points for a script: loading a spec or opening a store needs
    none of the analysis packages."""
    code = (
        "import sys, cutaway, cutaway.api, cutaway.model, cutaway.spec, cutaway.store\n"
        f"print(sorted({{n.partition('.')[0] for n in sys.modules}} & set({HEAVY!r})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_the_cli_offers_every_report_format() -> None:
    """The CLI spells the format names out so that `--help` need not import the reports."""
    from cutaway.cli.commands import REPORT_FORMATS
    from cutaway.report import FORMATS

    assert tuple(sorted(FORMATS)) == REPORT_FORMATS


def test_report_imports_no_scipy(db: Path) -> None:
    """A report's statistics are pure Python and numpy: scipy's import took most of its time."""
    status, heavy = imported_by(["report", "1", "--db", str(db), "--color", "never"])
    assert status == 0
    assert "scipy" not in heavy


def threads_and_blas_variable(code: str, environment: dict[str, str]) -> tuple[int, str | None]:
    """The number of threads of a fresh interpreter after ``code``, and its
    OPENBLAS_NUM_THREADS then (None: unset)."""
    probe = (
        f"{code}\nimport json, os\n"
        "print(json.dumps([len(os.listdir('/proc/self/task')),"
        " os.environ.get('OPENBLAS_NUM_THREADS')]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=environment, check=True
    )
    threads, variable = json.loads(result.stdout)
    return threads, variable


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="OpenBLAS starts no thread on one core")
def test_the_analysis_loads_numpy_without_blas_threads(db: Path) -> None:
    """numpy's OpenBLAS starts a spinning thread per core as it loads: a report loads it with
    one, and takes the variable back, so that the commands measured later do not inherit it."""
    environment = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    code = (
        "import contextlib, io\nfrom cutaway.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['report', '1', '--db', {str(db)!r}, '--color', 'never'])\n"
        "import numpy"
    )
    assert threads_and_blas_variable(code, environment) == (1, None)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="OpenBLAS starts no thread on one core")
def test_a_blas_thread_count_the_user_set_is_kept() -> None:
    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}
    assert threads_and_blas_variable("import cutaway.compare", environment) == (2, "2")


def test_report_imports_no_other_commands_module(db: Path) -> None:
    """A command line names one command: the parser takes only its options, and the other
    commands' modules (run's options, check, bisect, history) are not imported."""
    modules = modules_after(["report", "1", "--db", str(db), "--color", "never"])
    others = {"cutaway.cli.run", "cutaway.cli.run_options", "cutaway.cli.check"}
    others |= {"cutaway.cli.bisect", "cutaway.cli.history"}
    assert not others & modules


def test_a_plain_report_imports_no_rich_console(db: Path) -> None:
    """A report without colour (a file, a pipe, NO_COLOR) is laid out by
    report/styled_text.py: rich's console and its text, a tenth of the report's CPU, are
    imported for a colour report only."""
    modules = modules_after(["report", "1", "--db", str(db), "--color", "never"])
    assert not {"rich.console", "rich.text", "rich.style", "rich.markup"} & modules
    assert "cutaway.report.terminal" in modules  # the terminal report was drawn


@pytest.mark.skipif(
    importlib.util.find_spec("_statistics") is None,
    reason="an interpreter without statistics' C accelerator imports statistics itself",
)
def test_report_imports_no_statistics_module(db: Path) -> None:
    """The normal quantile is statistics' own C function: the statistics module, with
    fractions and decimal, cost each report 3 to 5 ms of CPU for it."""
    modules = modules_after(["report", "1", "--db", str(db), "--color", "never"])
    assert not {"statistics", "fractions", "decimal"} & modules


def test_a_command_line_experiment_imports_no_toml_parser_nor_secrets(tmp_path: Path) -> None:
    """`cutaway run -c CMD` has no experiment file to read, and its seed is 31 bits of
    os.urandom: tomllib (5 ms), secrets (with hmac and OpenSSL: 7 ms) and difflib (for a
    mistyped option's hint) are not imported; nor decimal (2 ms: a --parameter-scan's
    numbers)."""
    argv = ["run", "-c", "true", "--rounds", "1", "--db", str(tmp_path / "run.db")]
    modules = modules_after(argv)
    assert "cutaway.runner.runner" in modules  # it ran
    assert not {"tomllib", "secrets", "hmac", "difflib", "decimal"} & modules


def test_importing_the_metric_parsers_compiles_no_expression() -> None:
    """A load tool's output is read by few experiments: the parsers' expressions are compiled
    when first used, not by every `cutaway run` that imports the parsers."""
    code = (
        "import re, sys\nfrom cutaway import model\ncompiled = []\nre_compile = re.compile\n"
        "def counted(*arguments, **options):\n"
        "    compiled.append(sys._getframe(1).f_code.co_filename)\n"
        "    return re_compile(*arguments, **options)\n"
        "re.compile = counted\n"
        "from cutaway.metrics import parsers\n"
        "print(sum(name == parsers.__file__ for name in compiled))\n"
        "parsers.parse_wrk('Requests/sec: 12.5\\n')\n"
        "print(sum(name == parsers.__file__ for name in compiled))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    at_import, after_a_parse = result.stdout.split()
    assert at_import == "0"
    assert int(after_a_parse) > 0  # the count sees the parsers' own compilations


def test_a_report_without_probes_imports_no_probes_report_modules(db: Path) -> None:
    """No probe's part of a report shows anything without its result
    (tests/unit/test_report_probe_views.py): a report of an experiment without probes
    imports none of their report modules (their tables, a dozen dataclasses)."""
    modules = modules_after(["report", "1", "--db", str(db), "--color", "never"])
    assert "cutaway.report.layout" in modules  # the report was laid out
    assert not {m for m in modules if m.endswith((".sections", ".tables")) and "probes" in m}
    assert "cutaway.attribution.sections" not in modules


def test_a_run_without_probes_imports_no_probe_results(tmp_path: Path) -> None:
    """The probes' results (profiles, timed calls, phases: some forty dataclasses, each built as
    its module is imported) are imported when a result is made or read: `cutaway run -c true`,
    analysed and reported, makes none."""
    argv = ["run", "-c", "true", "--rounds", "1", "--db", str(tmp_path / "run.db")]
    modules = modules_after(argv)
    assert "cutaway.compare" in modules  # it was analysed
    unused = {
        "cutaway.model.calls",
        "cutaway.model.phases",
        "cutaway.model.profile",
        "cutaway.probes.calls.result",
        "cutaway.probes.profile.result",
        "cutaway.probes.spans.result",
        "cutaway.attribution.result",
    }
    assert not unused & modules


def test_a_run_without_a_load_phase_imports_no_load_settings_nor_file_reader(
    tmp_path: Path,
) -> None:
    """`cutaway run -c true` has no [load] table and no experiment file: the load phase's
    settings and result (a dozen dataclasses, each built as its module is imported), the
    [load] reader and the experiment file's reader are not imported, though the load plugin
    adds its quick mode's options to the parser and is asked about the experiment. Nor are
    the settings of the probes whose flags are apart from them (their dataclasses)."""
    argv = ["run", "-c", "true", "--rounds", "1", "--db", str(tmp_path / "run.db")]
    modules = modules_after(argv)
    assert "cutaway.compare" in modules  # it was analysed
    assert "cutaway.probes.load.plugin" in modules  # and the load plugin asked
    unused = {
        "cutaway.probes.load.settings",
        "cutaway.probes.load.result",
        "cutaway.probes.load.experiment_file",
        "cutaway.spec.parse",
        "cutaway.probes.profile.settings",
        "cutaway.probes.spans.settings",
        "cutaway.probes.uprobes.settings",
        "cutaway.stats.unpaired",  # `cutaway compare`'s estimate
    }
    assert not unused & modules


def test_the_model_imports_a_submodule_when_one_of_its_names_is_asked_for() -> None:
    code = (
        "import sys\nimport cutaway.model as model\n"
        "before = 'cutaway.model.profile' in sys.modules\n"
        "flame = model.FlameProfile\n"
        "from cutaway.model.profile import FlameProfile\n"
        "print(before, 'cutaway.model.profile' in sys.modules, flame is FlameProfile)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "True", "True"]
