"""Light commands start at once: `cutaway --version`, `--help` and `list` import neither scipy
nor numpy nor rich (issue #8). Each case runs in a fresh interpreter, since this test process
has long imported all three."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cutaway.model import Run, RunStatus, Spec, Variant
from cutaway.store import Store

HEAVY = ("scipy", "numpy", "rich")

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


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_version_and_help_import_not_even_the_store_or_the_spec_parser(argv: list[str]) -> None:
    """They only parse arguments: the model's dozens of dataclasses cost them as much as the
    interpreter's own start."""
    code = (
        "import sys\nfrom cutaway.cli.main import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "print(sorted(n for n in sys.modules if n.startswith('cutaway.')), file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    # cli.streams and visible are a few lines over the standard library, that every command needs.
    modules = ["cutaway.api", "cutaway.cli", "cutaway.cli.main", "cutaway.cli.streams"]
    assert result.stderr.strip() == str([*modules, "cutaway.visible"])


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
    from cutaway.cli.main import REPORT_FORMATS
    from cutaway.report import FORMATS

    assert tuple(sorted(FORMATS)) == REPORT_FORMATS


def test_report_imports_no_scipy(db: Path) -> None:
    """A report's statistics are pure Python and numpy: scipy's import took most of its time."""
    status, heavy = imported_by(["report", "1", "--db", str(db), "--color", "never"])
    assert status == 0
    assert "scipy" not in heavy
