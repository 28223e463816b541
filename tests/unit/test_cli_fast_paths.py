"""`cutaway --version`, `--help` and `list` are answered before the argument parser is built
(cutaway.cli.main). Each answer must be exactly the parser's: these tests hold them
equal, so that the static help cannot drift from the parser it stands for."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cutaway import api
from cutaway.cli import commands, listing, main
from cutaway.model import Run, RunStatus, Spec, Variant
from cutaway.store import LATEST_VERSION, Store, schema
from cutaway.store.listing import read_listing


def answer(entry: Callable[[list[str]], int], argv: list[str]) -> tuple[object, str]:
    """(exit status, standard output) of an entry point; argparse exits with SystemExit."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            status: object = entry(argv)
        except SystemExit as exit_:
            status = exit_.code
    return status, out.getvalue()


def parser_output(argv: list[str]) -> tuple[object, str]:
    """The full parser's answer (cutaway.cli.commands.main)."""
    return answer(commands.main, argv)


def fast_output(argv: list[str]) -> tuple[object, str]:
    """The entry point's answer (cutaway.cli.main.main), fast path or not."""
    return answer(main.main, argv)


@pytest.mark.parametrize("columns", [main.HELP_MIN_COLUMNS, 80, 100, 120, 200, 1000])
def test_static_help_is_the_parsers_help(monkeypatch: pytest.MonkeyPatch, columns: int) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    assert commands.build_parser().format_help() == main.HELP
    assert parser_output(["--help"]) == (0, main.HELP)
    assert fast_output(["--help"]) == (0, main.HELP)
    assert fast_output(["-h"]) == (0, main.HELP)


def test_narrow_terminals_get_the_parsers_wrapping(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below HELP_MIN_COLUMNS argparse wraps differently; the fast path then leaves --help to
    it, so the answer is still the parser's."""
    monkeypatch.setenv("COLUMNS", str(main.HELP_MIN_COLUMNS - 1))
    narrow = commands.build_parser().format_help()
    assert narrow != main.HELP  # else HELP_MIN_COLUMNS could be lower
    assert fast_output(["--help"]) == parser_output(["--help"]) == (0, narrow)


def test_terminal_columns_are_the_ones_argparse_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    for value in ("50", "132", "0", "wide", None):
        if value is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", value)
        assert main._terminal_columns() == shutil.get_terminal_size().columns


def test_version_is_the_parsers(capsys: pytest.CaptureFixture[str]) -> None:
    assert fast_output(["--version"]) == parser_output(["--version"]) == (0, "cutaway 0.1.0\n")


def test_the_default_store_is_the_librarys() -> None:
    assert str(api.DEFAULT_DB) == listing.DEFAULT_DB
    assert api.DB_VARIABLE == listing.DB_VARIABLE
    assert commands.DEFAULT_DB == listing.DEFAULT_DB


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Two experiments, one labelled, one with hostile names."""
    path = tmp_path / "weird ?#% name.db"
    with Store(path) as store:
        for name, label in (("first", None), ("sec'ond [x]", "v1.2")):
            spec = Spec(
                name=name,
                variants=(Variant(name="a", command=("true",)), Variant(name="b", command=("x",))),
                baseline="a",
                rounds=1,
            )
            experiment_id = store.create_experiment(spec, {}, label, "test")
            run = Run("a", 0, 0, RunStatus.OK, 0, None, {"wall": 0.001}, started_at=0.0)
            store.add_run(experiment_id, run)
    return path


def listing_via_store(path: Path) -> str:
    rows = Store(path, create=False).list_experiments()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main.print_listing(
            [(r.id, r.name, r.status, r.created_at, r.label, r.n_variants, r.n_runs) for r in rows],
            str(path),
        )
    return out.getvalue()


@pytest.mark.parametrize("form", ["--db", "--db="])
def test_list_is_the_parsers(db: Path, form: str) -> None:
    argv = ["list", form, str(db)] if form == "--db" else ["list", f"--db={db}"]
    expected = parser_output(argv)
    assert (
        expected[0] == 0
        and "#2    running    2 variants      1 runs  sec'ond [x]  [v1.2]" in (expected[1])
    )
    assert fast_output(argv) == expected
    assert expected[1] == listing_via_store(db)


def test_list_uses_cutaway_db(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTAWAY_DB", str(db))
    assert fast_output(["list"]) == parser_output(["list"]) == (0, listing_via_store(db))


def test_list_of_an_empty_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    Store(path).close()
    expected = (0, f"no experiments in {path}\n")
    assert fast_output(["list", "--db", str(path)]) == parser_output(["list", "--db", str(path)])
    assert fast_output(["list", "--db", str(path)]) == expected


def test_list_leaves_problems_to_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No file: the full path runs, and the store's message and exit status are the same as
    ever; nothing is created."""
    missing = tmp_path / "missing.db"
    assert read_listing(missing) is None
    assert main.main(["list", "--db", str(missing)]) == 1
    assert "no store at" in capsys.readouterr().err
    assert not missing.exists()


def test_an_older_store_is_migrated_by_the_store(tmp_path: Path) -> None:
    """read_listing reads only the current schema; an older store goes through Store, which
    migrates it, and is then listed."""
    import sqlite3

    path = tmp_path / "old.db"
    connection = sqlite3.connect(path, isolation_level=None)
    for migration in schema.MIGRATIONS[:2]:
        for statement in migration.statements:
            connection.execute(statement)
    connection.execute("PRAGMA user_version = 2")
    connection.close()
    assert read_listing(path) is None
    assert fast_output(["list", "--db", str(path)]) == (0, f"no experiments in {path}\n")
    assert read_listing(path) == []  # migrated to LATEST_VERSION by Store
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION


@pytest.mark.parametrize(
    "argv",
    [
        ["list", "--bd", "x.db"],
        ["list", "--d", "x.db"],
        ["list", "--db"],
        ["list", "--db", "-x"],
        ["--vers"],
        ["--version", "list"],
    ],
)
def test_anything_else_goes_to_the_parser(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[list[str]] = []
    monkeypatch.setattr(commands, "main", lambda args: called.append(list(args)) or 0)
    assert main.main(argv) == 0
    assert called == [argv]


def test_the_script_answers_as_the_module(db: Path) -> None:
    """The installed entry point (cutaway.cli.main:main) end to end, in a fresh interpreter."""
    for argv in (["--version"], ["list", "--db", str(db)]):
        result = subprocess.run(
            [sys.executable, "-m", "cutaway", *argv],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "100"},
        )
        assert result.returncode == 0
        assert result.stdout == parser_output(argv)[1]
