"""The analysis kept between commands (cutaway.kept_analysis): a kept analysis is the one the
analysis makes, in every format and to the bit; it is read back only while the experiment's
rows and cutaway's code are what they were; anything else about its file is analysed again."""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from cutaway import compare, kept_analysis
from cutaway.compare import analyze
from cutaway.kept_analysis import analysis_of, decoded, encoded, read_kept
from cutaway.model import PROCESS_METRICS, Analysis, Calibration, Run, RunStatus, Spec, Variant
from cutaway.report import FORMATS, render_terminal
from cutaway.store import Store
from cutaway.store.db import CONTENT_TABLES

ROUNDS = 12


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("CUTAWAY_CACHE_DIR", str(directory))
    return directory / "analyses"


def make_experiment(path: Path, *, finish: bool = True) -> tuple[Store, int]:
    """Three variants, a failed run, a metric at zero in every run, one with zeros in some."""
    spec = Spec(
        name="kept",
        variants=(Variant("a", ("x",)), Variant("b", ("y",)), Variant("c", ("z",))),
        baseline="a",
        rounds=ROUNDS,
        warmup_rounds=0,
    )
    store = Store(path)
    experiment_id = store.create_experiment(spec, {"cores": 2, "loadavg_start": [0.1]}, None, "1")
    store.set_calibration(experiment_id, Calibration("true", 30, 0.0011, 0.0009))
    rng = np.random.default_rng(7)
    for round_index in range(ROUNDS):
        for position, (name, factor) in enumerate((("a", 1.0), ("b", 1.03), ("c", 0.99))):
            values = {m.name: float(rng.uniform(1.0, 2.0)) for m in PROCESS_METRICS}
            values.update(
                wall=0.01 * factor * float(rng.lognormal(0, 0.02)),
                major_faults=0.0,
                block_in=float(rng.integers(0, 2)),
            )
            failed = name == "c" and round_index == 3
            status = RunStatus.FAILED if failed else RunStatus.OK
            run = Run(name, round_index, position, status, int(failed), None, values, 1.5e9)
            store.add_run(experiment_id, run)
    if finish:
        store.finish_experiment(experiment_id, "complete", {"loadavg_end": [0.2]})
    return store, experiment_id


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Store, int]:
    return make_experiment(tmp_path / "kept.db")


def renderings(analysis: Analysis) -> dict[str, str]:
    """The analysis in every format, and the terminal's in colour too."""
    shown = {name: found.render(analysis) for name, found in FORMATS.items()}
    shown["terminal in colour"] = render_terminal(analysis, color=True, width=120)
    return shown


def refuse_analysing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_: object, **__: object) -> Analysis:
        raise AssertionError("analysed again: the kept analysis was not read")

    monkeypatch.setattr(compare, "analyze", refused)


def kept_files(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.json")) if cache.exists() else []


@pytest.mark.parametrize("all_pairs", [False, True])
def test_a_kept_analysis_is_the_analysis_in_every_format(
    stored: tuple[Store, int], cache: Path, monkeypatch: pytest.MonkeyPatch, all_pairs: bool
) -> None:
    store, experiment_id = stored
    fresh = analyze(store, experiment_id, all_pairs=all_pairs)
    first = analysis_of(store, experiment_id, all_pairs=all_pairs)  # analysed, and kept
    assert encoded(first) == encoded(fresh)
    assert len(kept_files(cache)) == 1
    refuse_analysing(monkeypatch)
    kept = analysis_of(store, experiment_id, all_pairs=all_pairs)
    assert encoded(kept) == encoded(fresh)  # the same types and floats, to the bit
    assert renderings(kept) == renderings(fresh)
    assert bool(kept.pairwise) is all_pairs


def test_each_question_is_kept_apart(stored: tuple[Store, int], cache: Path) -> None:
    store, experiment_id = stored
    analysis_of(store, experiment_id)
    analysis_of(store, experiment_id, all_pairs=True)
    assert len(kept_files(cache)) == 2
    assert analysis_of(store, experiment_id).pairwise == ()


def _another_status(store: Store, path: Path, experiment_id: int) -> None:
    store.set_status(experiment_id, "incomplete")


def _one_value_more(store: Store, path: Path, experiment_id: int) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute(
            "UPDATE measurements SET value = value * 1.5 WHERE metric = 'wall' AND run_id ="
            " (SELECT MIN(id) FROM runs WHERE experiment_id = ? AND variant = 'b')",
            (experiment_id,),
        )


def _one_run_less(store: Store, path: Path, experiment_id: int) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA foreign_keys = ON")
        connection.execute(
            "DELETE FROM runs WHERE experiment_id = ? AND round_index = 5 AND variant = 'c'",
            (experiment_id,),
        )


def _another_calibration(store: Store, path: Path, experiment_id: int) -> None:
    store.set_calibration(experiment_id, Calibration("true", 30, 0.002, 0.001))


@pytest.mark.parametrize(
    "change", [_another_status, _one_value_more, _one_run_less, _another_calibration]
)
def test_a_changed_experiment_is_analysed_again(
    tmp_path: Path, change: Callable[[Store, Path, int], None]
) -> None:
    store, experiment_id = make_experiment(tmp_path / "kept.db")
    before = analysis_of(store, experiment_id)
    change(store, tmp_path / "kept.db", experiment_id)
    after = analysis_of(store, experiment_id)
    assert encoded(after) != encoded(before)
    assert renderings(after) == renderings(analyze(store, experiment_id))


def test_another_version_of_cutaway_analyses_again(
    stored: tuple[Store, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, experiment_id = stored
    analysis_of(store, experiment_id)
    monkeypatch.setattr(kept_analysis, "__version__", "999.0")
    refuse_analysing(monkeypatch)
    with pytest.raises(AssertionError, match="analysed again"):
        analysis_of(store, experiment_id)


def test_a_changed_source_file_changes_the_code_key(tmp_path: Path) -> None:
    """A checkout keeps its version while its code changes: each source file's size and
    modification time are part of the key, bytecode caches not."""
    package = tmp_path / "package"
    (package / "inner" / "__pycache__").mkdir(parents=True)
    (package / "inner" / "module.py").write_text("x = 1\n")
    (package / "inner" / "__pycache__" / "module.cpython-311.pyc").write_bytes(b"\0")

    def files() -> list[tuple[str, int, int]]:
        return sorted(kept_analysis._source_files(str(package), str(package)))

    before = files()
    assert [name for name, _, _ in before] == ["/inner/module.py"]
    stamp = os.stat(package / "inner" / "module.py").st_mtime_ns
    os.utime(package / "inner" / "module.py", ns=(stamp + 1000, stamp + 1000))
    assert files() != before


def test_a_running_experiment_is_not_kept(tmp_path: Path, cache: Path) -> None:
    store, experiment_id = make_experiment(tmp_path / "running.db", finish=False)
    analysis_of(store, experiment_id)
    assert kept_files(cache) == []


def test_an_experiment_with_a_probe_is_not_kept(stored: tuple[Store, int], cache: Path) -> None:
    store, experiment_id = stored
    store.set_probe(experiment_id, "calls", "LD_PRELOAD interposer", 1e-7)
    assert analysis_of(store, experiment_id).probes  # the probe's line is in the report
    assert kept_files(cache) == []


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: "{not json",
        lambda text: text[: len(text) // 2],
        lambda text: text.replace('"format":1', '"format":0'),
        lambda text: text.replace("cutaway.model.results:Summary", "subprocess:Popen"),
        lambda text: text.replace("cutaway.model.results:Summary", "cutaway.store.db:Store"),
        lambda text: text.replace("cutaway.model.results:Verdict", "cutaway.model.results:Nope"),
        lambda text: text.replace('["o","cutaway.model.results:Caution",', '["o",'),
        lambda text: text.replace('"t",', '"x",'),
    ],
)
def test_a_damaged_kept_file_is_analysed_again_and_rewritten(
    stored: tuple[Store, int], cache: Path, damage: Callable[[str], str]
) -> None:
    store, experiment_id = stored
    fresh = analysis_of(store, experiment_id)
    (path,) = kept_files(cache)
    text = path.read_text()
    path.write_text(damage(text))
    assert path.read_text() != text  # the damage took
    assert renderings(analysis_of(store, experiment_id)) == renderings(fresh)
    assert path.read_text() == text  # written again whole


def test_an_unwritable_cache_directory_is_left_alone(
    stored: tuple[Store, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, experiment_id = stored
    (tmp_path / "a file").write_text("")
    monkeypatch.setenv("CUTAWAY_CACHE_DIR", str(tmp_path / "a file"))
    assert renderings(analysis_of(store, experiment_id)) == renderings(
        analyze(store, experiment_id)
    )


def test_decoding_builds_only_the_model_s_value_objects() -> None:
    for refused in (
        ["o", "subprocess:Popen", ["l", "true"]],
        ["o", "cutaway.store.db:Store", "x"],
        ["e", "cutaway.model.results:StrEnum", "x"],  # imported there, not made there
        ["o", "cutaway.model.results:Verdict"],  # an enum is not built field by field
        ["e", "cutaway.model.results:Summary", "x"],
        ["q", 1],
        [],
        {"a": 1},
    ):
        with pytest.raises(ValueError):
            decoded(refused)


def test_a_value_outside_the_model_is_not_kept(stored: tuple[Store, int], cache: Path) -> None:
    with pytest.raises(kept_analysis.Unkept):
        encoded(np.int64(3))
    with pytest.raises(kept_analysis.Unkept):
        encoded(Path("x"))
    store, experiment_id = stored
    kept_analysis.keep("0" * 40, analyze(store, experiment_id))
    assert read_kept("0" * 40) is not None
    kept_analysis.keep("1" * 40, Analysis((), (), (), (), None, {"a": {np.str_("ok"): 1}}))
    assert read_kept("1" * 40) is None


def test_the_oldest_kept_files_go(
    stored: tuple[Store, int], cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, experiment_id = stored
    analysis = analyze(store, experiment_id)
    monkeypatch.setattr(kept_analysis, "KEPT_FILES", 3)
    for index in range(5):
        kept_analysis.keep(f"{index:040d}", analysis)
        stamp = 1_000_000_000 * (index + 1)
        os.utime(cache / f"{index:040d}.json", ns=(stamp, stamp))
    assert [path.stem for path in kept_files(cache)] == [f"{i:040d}" for i in (2, 3, 4)]


def test_only_kept_files_are_removed(
    stored: tuple[Store, int], cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The directory may hold other files (CUTAWAY_CACHE_DIR a directory in use): older
    than every kept file, they stay; a dangling link does not stop the removal."""
    store, experiment_id = stored
    analysis = analyze(store, experiment_id)
    monkeypatch.setattr(kept_analysis, "KEPT_FILES", 2)
    cache.mkdir(parents=True)
    others = [cache / "notes.txt", cache / "thesis.json", cache / f"{'A' * 40}.json"]
    for other in others:
        other.write_text("not cutaway's")
        os.utime(other, ns=(1, 1))
    (cache / "gone").symlink_to(cache / "nowhere")
    stale = cache / f"{'f' * 40}.json.123.partial"
    stale.write_text("{")
    os.utime(stale, ns=(1, 1))
    for index in range(4):
        kept_analysis.keep(f"{index:040d}", analysis)
        stamp = 1_000_000_000 * (index + 1)
        os.utime(cache / f"{index:040d}.json", ns=(stamp, stamp))
    assert sorted(path.name for path in cache.iterdir()) == sorted(
        [f"{index:040d}.json" for index in (2, 3)] + [other.name for other in others] + ["gone"]
    )


def test_the_digest_reads_every_table_of_an_experiment(stored: tuple[Store, int]) -> None:
    """Every table of the schema but the triage (kept by experiment name, read by `cutaway
    history` only): a migration that adds one must add it to the digest too."""
    store, experiment_id = stored
    with sqlite3.connect(store.path) as connection:
        tables = {
            name
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'"
            )
        }
    assert set(CONTENT_TABLES) == tables - {"triage"}
    content = store.experiment_content(experiment_id, kept_analysis.LARGEST_RUN_DATA_BYTES)
    assert content is not None
    assert [table for table, _ in content] == list(CONTENT_TABLES)
    assert store.experiment_content(experiment_id, -1) is not None  # no run data at all


REPORT = """
import contextlib, io, sys
from cutaway.cli.main import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    status = main(["report", "--db", sys.argv[1], "--color", "never"])
unwanted = ("numpy", "datetime", "socket", "tempfile", "cutaway.compare")
print(status, *sorted(set(unwanted) & set(sys.modules)), file=sys.stderr)
sys.stdout.write(out.getvalue())
"""


def test_a_kept_report_imports_no_numpy(stored: tuple[Store, int], cache: Path) -> None:
    """What keeping saves: numpy and the bootstrap. The first report analyses (numpy), the
    second reads the kept analysis and prints the same report, having imported neither the
    analysis nor what only writing needs (the store's lease: socket; a temporary file) nor
    the sqlite3 package's datetime adapters."""
    store, _ = stored
    environment = {**os.environ, "CUTAWAY_CACHE_DIR": str(cache.parent)}

    def report() -> tuple[str, str]:
        done = subprocess.run(
            [sys.executable, "-c", REPORT, str(store.path)],
            capture_output=True,
            text=True,
            env=environment,
            check=True,
        )
        return done.stderr.strip(), done.stdout

    first, first_report = report()
    second, second_report = report()
    assert first.split()[0] == "0" and "numpy" in first.split()
    assert second == "0"
    assert second_report == first_report
    assert json.loads(kept_files(cache)[0].read_text())["format"] == kept_analysis.FORMAT


@pytest.mark.parametrize("planted", ["fifo", "device"])
def test_a_kept_path_that_is_not_a_file_is_analysed_again(
    stored: tuple[Store, int], cache: Path, planted: str
) -> None:
    """A FIFO at the kept file's path would block the read for ever; a device (a link to
    /dev/zero) would read until memory ran out: only a regular file is read."""
    store, experiment_id = stored
    fresh = analysis_of(store, experiment_id)
    (path,) = kept_files(cache)
    path.unlink()
    if planted == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    key = path.name.removesuffix(".json")
    program = f"from cutaway import kept_analysis; print(kept_analysis.read_kept({key!r}))"
    result = subprocess.run(
        [sys.executable, "-c", program],
        env={**os.environ, "CUTAWAY_CACHE_DIR": str(cache.parent)},
        capture_output=True, text=True, timeout=20,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)),
    )  # fmt: skip
    assert (result.returncode, result.stdout, result.stderr) == (0, "None\n", "")
    assert renderings(analysis_of(store, experiment_id)) == renderings(fresh)


def test_a_kept_file_larger_than_any_analysis_is_not_read(
    stored: tuple[Store, int], cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A huge file at the kept path would be read whole into memory: past the largest size a
    kept analysis has, it is analysed again instead (here the limit is lowered to the file's
    size less one byte, so the test writes nothing large)."""
    store, experiment_id = stored
    fresh = analysis_of(store, experiment_id)
    (path,) = kept_files(cache)
    key = path.name.removesuffix(".json")
    assert kept_analysis.read_kept(key) is not None
    monkeypatch.setattr(kept_analysis, "LARGEST_KEPT_BYTES", path.stat().st_size - 1)
    assert kept_analysis.read_kept(key) is None
    assert renderings(analysis_of(store, experiment_id)) == renderings(fresh)


def _committing_while_analysing(
    monkeypatch: pytest.MonkeyPatch, commit: Callable[[Store], None], path: Path
) -> None:
    """compare.analyze, with a commit to the store from another connection while it runs."""

    def analysing(store: Store, experiment_id: int, **options: object) -> Analysis:
        with Store(path) as other:
            commit(other)
        return analyze(store, experiment_id, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(compare, "analyze", analysing)


def test_an_experiment_changed_while_it_was_analysed_is_not_kept(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, experiment_id = make_experiment(tmp_path / "kept.db")

    def one_more_run(other: Store) -> None:
        other.add_run(experiment_id, Run("a", 99, 0, RunStatus.OK, 0, None, {"wall": 1.0}, 0.0))

    _committing_while_analysing(monkeypatch, one_more_run, tmp_path / "kept.db")
    analysis_of(store, experiment_id)
    assert kept_files(cache) == []


def test_a_commit_elsewhere_while_analysing_is_read_as_no_change(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another experiment stored meanwhile: the digest is read again, and is the same."""
    store, experiment_id = make_experiment(tmp_path / "kept.db")
    spec = store.experiment(experiment_id).spec
    digests = _counted_digests(store, monkeypatch)

    def another_experiment(other: Store) -> None:
        other.create_experiment(spec, {}, None, "2")

    _committing_while_analysing(monkeypatch, another_experiment, tmp_path / "kept.db")
    analysis_of(store, experiment_id)
    assert len(kept_files(cache)) == 1 and digests == [experiment_id] * 2


def test_without_a_commit_elsewhere_the_digest_is_read_once(
    stored: tuple[Store, int], cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite counts other connections' commits: when none came while the experiment was
    analysed, the digest read before it still holds, and is not read a second time."""
    store, experiment_id = stored
    digests = _counted_digests(store, monkeypatch)
    analysis_of(store, experiment_id)
    assert len(kept_files(cache)) == 1 and digests == [experiment_id]


def _counted_digests(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The experiments whose content the store is asked for, in order, from now on."""
    asked: list[int] = []
    read = store.experiment_content

    def counted(experiment_id: int, largest: int) -> object:
        asked.append(experiment_id)
        return read(experiment_id, largest)

    monkeypatch.setattr(store, "experiment_content", counted)
    return asked


KEY = """
import sys
from cutaway.kept_analysis import _key
from cutaway.store import Store
with Store(sys.argv[1]) as store:
    print(_key(store, int(sys.argv[2]), False, (None, None)))
"""


def test_the_digest_is_the_same_in_another_process(stored: tuple[Store, int]) -> None:
    """What `cutaway run` keeps, `cutaway report` finds: the digest depends on the stored
    values alone (the variants "a", "b", "c" are strings Python may share between rows)."""
    store, experiment_id = stored
    here = kept_analysis._key(store, experiment_id, False, (None, None))
    there = subprocess.run(
        [sys.executable, "-c", KEY, str(store.path), str(experiment_id)],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert here is not None and there == here


@pytest.mark.parametrize(
    "edit",
    [
        "UPDATE measurements SET value = CAST(value AS TEXT) WHERE run_id = 1 AND metric = 'wall'",
        "UPDATE runs SET message = CAST('' AS BLOB) WHERE id = 1",
        "UPDATE runs SET message = 'x' WHERE id = 1",
    ],
)
def test_a_value_of_another_type_is_another_digest(stored: tuple[Store, int], edit: str) -> None:
    """The same number as text, a blob for the same text, other text: each is
    another content, and another digest (a damaged store is never read as a kept one)."""
    store, experiment_id = stored
    before = kept_analysis._key(store, experiment_id, False, (None, None))
    with sqlite3.connect(store.path) as raw:
        raw.execute(edit)
    raw.close()
    assert kept_analysis._key(store, experiment_id, False, (None, None)) != before


def test_rows_pickle_refuses_are_digested_by_their_repr() -> None:
    refused = [("runs", [(1, (row for row in range(0)))])]  # a generator cannot be pickled
    assert kept_analysis._serialized(refused) == b"repr" + repr(refused).encode()
    assert kept_analysis._serialized(("runs", [(1, 0.5)])) != kept_analysis._serialized(
        ("runs", [(1, 0.5000000000000001)])
    )
