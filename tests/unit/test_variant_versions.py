"""A version per variant: ``version``, ``version_from`` and ``version_command`` in an experiment
file, ``--variant-version`` in quick mode; read once before anything runs (real runs, real git),
stored with the variant, shown in the report; bad input names the file, line, key and variant,
exits 2 and stores nothing."""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path

import pytest
from repositories import git

from cutaway.cli import main as entry
from cutaway.spec import SpecError, parse_spec, quick_spec


def _checkout(path: Path, tag: str) -> Path:
    path.mkdir(parents=True)
    git("init", "-q", cwd=path)
    git("commit", "-q", "--allow-empty", "-m", "one", cwd=path)
    git("tag", tag, cwd=path)
    return path


def _run(db: Path, *args: str) -> int:
    return entry.main(["run", "--db", str(db), "--rounds", "2", "--warmup", "0", *args])


def _report(db: Path, capsys: pytest.CaptureFixture[str], fmt: str = "json") -> str:
    capsys.readouterr()
    assert entry.main(["report", "--db", str(db), "--format", fmt]) == 0
    return capsys.readouterr().out


def _stored_versions(db: Path) -> dict[str, str | None]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT name, version FROM variants ORDER BY position")
        return dict(rows.fetchall())


def test_each_source_gives_a_variant_its_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """version as written; version_from relative to the file, not to where cutaway runs;
    version_command in the variant's environment and directory, run once for all rounds."""
    experiment = tmp_path / "bench"
    _checkout(experiment / "src", "v2.5")
    (experiment / "build").mkdir()
    counter = tmp_path / "count"
    (experiment / "bench.toml").write_text(
        f"""
name = "nightly"

[[variants]]
name = "old"
command = ["true"]
version = "  v1.0  "

[[variants]]
name = "tree"
command = ["true"]
version_from = "src"

[[variants]]
name = "built"
command = ["true"]
cwd = "{experiment / "build"}"
env = {{ FLAVOUR = "lto" }}
version_command = "echo run >> {counter}; echo $FLAVOUR-$(basename $PWD)"

[[variants]]
name = "plain"
command = ["true"]
"""
    )
    monkeypatch.chdir(tmp_path)  # not the file's directory: version_from must not care
    db = tmp_path / "v.db"
    assert _run(db, str(experiment / "bench.toml"), "--label", "nightly-7", "--rounds", "3") == 0
    assert _stored_versions(db) == {
        "old": "v1.0",
        "tree": "v2.5",
        "built": "lto-build",
        "plain": None,
    }
    assert counter.read_text() == "run\n"  # once before the first round, not once per run
    document = json.loads(_report(db, capsys))
    [experiment_json] = document["experiments"]
    assert experiment_json["label"] == "nightly-7"
    assert experiment_json["versions"] == _stored_versions(db)
    terminal = _report(db, capsys, "terminal")
    assert "version of tree: v2.5" in terminal
    assert "version of plain: nightly-7 (the label)" in terminal
    markdown = _report(db, capsys, "markdown")
    assert "version of `built`: `lto-build`" in markdown


def test_a_dirty_checkout_says_so(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path / "src", "v3")
    (checkout / "new").write_text("x")
    git("add", "new", cwd=checkout)
    (tmp_path / "e.toml").write_text(
        'name = "e"\n[[variants]]\nname = "a"\ncommand = ["true"]\nversion_from = "src"\n'
    )
    db = tmp_path / "v.db"
    assert _run(db, str(tmp_path / "e.toml")) == 0
    assert _stored_versions(db) == {"a": "v3-dirty"}


def test_the_matrix_fills_a_version(tmp_path: Path) -> None:
    (tmp_path / "m.toml").write_text(
        'name = "m"\n[matrix]\nn = [1, 2]\n'
        '[[variants]]\nname = "a"\ncommand = ["true"]\nversion = "build-{n}"\n'
    )
    db = tmp_path / "v.db"
    assert _run(db, str(tmp_path / "m.toml")) == 0
    assert _stored_versions(db) == {"a[n=1]": "build-1", "a[n=2]": "build-2"}


def test_quick_mode_takes_a_version_per_command_or_one_for_all(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    commands = ["-n", "base", "-c", "true", "-n", "cand", "-c", "true"]
    versions = ["--variant-version", "v1.0", "--variant-version", "abc1234"]
    assert _run(db, *commands, *versions) == 0
    assert _stored_versions(db) == {"base": "v1.0", "cand": "abc1234"}
    spec = quick_spec(["true", "false"], versions=["same"])
    assert [v.version.text for v in spec.variants if v.version] == ["same", "same"]


@pytest.mark.parametrize(
    ("body", "line", "key", "problem"),
    [
        (
            'version_command = "echo boom >&2; exit 3"',
            8,
            "variants[1].version_command",
            "the command exited with status 3 (boom)",
        ),
        ('version_command = "true"', 8, "variants[1].version_command", "printed nothing"),
        (
            'version_command = "yes | head -c 3000000"',
            8,
            "variants[1].version_command",
            "the command printed 3000000 bytes, more than a version's 200 characters",
        ),
        (
            'version_command = "echo nothing of use; yes no | head -c 3000000 >&2; exit 4"',
            8,
            "variants[1].version_command",
            "the command exited with status 4 (no)",
        ),
        ('version_from = "."', 8, "variants[1].version_from", "not a git checkout"),
        ('version_from = "nowhere"', 8, "variants[1].version_from", "not a directory"),
    ],
)
def test_a_version_that_cannot_be_read_exits_2_before_anything_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    body: str,
    line: int,
    key: str,
    problem: str,
) -> None:
    ran = tmp_path / "ran"
    experiment = tmp_path / "bad.toml"
    experiment.write_text(
        'name = "bad"\n[[variants]]\nname = "a"\ncommand = ["true"]\n'
        f'[[variants]]\nname = "b"\ncommand = ["true"]\n{body}\nsetup = "touch {ran}"\n'
    )
    db = tmp_path / "v.db"
    capsys.readouterr()
    assert _run(db, str(experiment)) == 2
    err = capsys.readouterr().err
    assert f"{experiment}:{line}: {key}: the version of variant 'b' cannot be read" in err
    assert problem in err
    assert not ran.exists()  # no setup hook ran
    assert entry.main(["list", "--db", str(db)]) == 0
    assert "no experiments" in capsys.readouterr().out


def test_two_sources_for_one_variant_are_refused() -> None:
    text = (
        'name = "x"\n[[variants]]\nname = "a"\ncommand = ["true"]\n'
        'version = "1"\nversion_command = "echo 2"\n'
    )
    with pytest.raises(SpecError) as caught:
        parse_spec(text, "x.toml")
    assert str(caught.value).startswith("x.toml:6: variants[0].version_command: give one of")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('version = ""', "variants[0].version: expected a non-empty string"),
        ("version_from = 3", "variants[0].version_from: expected a non-empty string"),
    ],
)
def test_an_empty_or_mistyped_version_is_refused(text: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(f'name = "x"\n[[variants]]\nname = "a"\ncommand = ["true"]\n{text}\n')
    assert message in str(caught.value)


def test_a_version_at_the_top_level_says_where_it_belongs() -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec('version = "v1.2"\nname = "x"\ncommand = ["true"]\n')
    assert "the version of what a variant runs is its own version key" in str(caught.value)
    with pytest.raises(SpecError) as caught:
        parse_spec('name = "x"\ncommand = ["true"]\nversion_from = "."\n')
    assert "version_from belongs in [[variants]]" in str(caught.value)


@pytest.mark.parametrize(
    ("versions", "message"),
    [
        (["a", "b", "c"], "got 3 --variant-version for 2 commands"),
        ([""], "--variant-version: expected a non-empty string"),
    ],
)
def test_quick_mode_versions_are_checked(versions: list[str], message: str) -> None:
    with pytest.raises(SpecError) as caught:
        quick_spec(["true", "false"], versions=versions)
    assert message in str(caught.value)


def test_the_version_option_belongs_to_quick_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "e.toml").write_text('name = "e"\ncommand = ["true"]\n')
    capsys.readouterr()
    assert _run(tmp_path / "v.db", str(tmp_path / "e.toml"), "--variant-version", "x") == 2
    assert "--variant-version only apply to -c commands" in capsys.readouterr().err


def test_a_resumed_experiment_keeps_the_versions_read_when_it_started(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command would print something else now: the experiment's versions stay the first."""
    state = tmp_path / "state"
    state.write_text("first")
    (tmp_path / "e.toml").write_text(
        f'name = "e"\nrounds = 3\n[[variants]]\nname = "a"\ncommand = ["true"]\n'
        f'version_command = "cat {state}"\n'
    )
    db = tmp_path / "v.db"
    assert _run(db, str(tmp_path / "e.toml"), "--rounds", "3") == 0
    with sqlite3.connect(db) as connection:  # as if it had stopped after one round
        connection.execute("PRAGMA foreign_keys = ON")  # its measurements go with the runs
        connection.execute("DELETE FROM runs WHERE round_index > 0")
        connection.execute("UPDATE experiments SET status = 'incomplete'")
    state.write_text("second")
    assert entry.main(["run", "--db", str(db), "--resume", "1"]) == 0
    assert _stored_versions(db) == {"a": "first"}


def _versioned_spec(tmp_path: Path, command: str, hook_timeout: str = "10s") -> str:
    path = tmp_path / "e.toml"
    path.write_text(
        f'name = "e"\nhook_timeout = "{hook_timeout}"\n[[variants]]\nname = "a"\n'
        f'command = ["true"]\nversion_command = "{command}"\n'
    )
    return str(path)


def test_a_version_command_past_its_time_limit_is_stopped_with_what_it_started(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """At hook_timeout the command's whole process group is stopped, as a hook's is: a child it
    started in the background (holding its output) neither outlives it nor keeps cutaway
    waiting for that output to close (found by a hostile re-run: the shell alone was killed,
    its child ran on)."""
    experiment = _versioned_spec(tmp_path, f"sleep {LEFT_BEHIND} & wait; echo v", "0.5s")
    db = tmp_path / "v.db"
    capsys.readouterr()
    assert _run(db, experiment) == 2
    err = capsys.readouterr().err
    assert "variants[0].version_command: the version of variant 'a' cannot be read" in err
    assert "the command did not end within 0.5 s" in err
    assert _running(f"sleep {LEFT_BEHIND}") == []  # stopped with the shell
    assert not db.exists() or "no experiments" in _listing(db, capsys)


def test_an_interrupt_while_a_version_command_runs_stops_it_and_stores_nothing(
    tmp_path: Path,
) -> None:
    """SIGTERM (to cutaway, from the command itself) stops the command at once, not when it
    ends, and the experiment is not made: nothing was measured."""
    from cutaway import interrupts
    from cutaway.runner.runner import run_experiment
    from cutaway.spec import load_spec
    from cutaway.store import Store

    marker = tmp_path / "ran-to-its-end"
    experiment = _versioned_spec(tmp_path, f"kill -TERM $PPID; sleep 5; touch {marker}; echo v")
    store = Store(tmp_path / "v.db")
    with pytest.raises(interrupts.Stopped):
        run_experiment(load_spec(experiment), store, environment={})
    assert interrupts.first_signal() == signal.SIGTERM
    assert not marker.exists()
    assert store.list_experiments() == []


LEFT_BEHIND = "30.4711"  # a sleep no other process runs


def _running(command_line: str) -> list[int]:
    """The processes whose command line is ``command_line``."""
    found = []
    for process in Path("/proc").iterdir():
        if process.name.isdigit():
            try:
                words = (process / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b" ".join(word for word in words if word).decode(errors="replace") == command_line:
                found.append(int(process.name))
    return found


def _listing(db: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert entry.main(["list", "--db", str(db)]) == 0
    return capsys.readouterr().out
