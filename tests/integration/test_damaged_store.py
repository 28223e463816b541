"""A store edited by hand or damaged: every reading command says which
experiment, which ``table.column`` and what is wrong, and exits 2; never a traceback. `list`
leaves a damaged experiment out with a warning and lists the others.

One real experiment (the calls probe and a time-series metric, so that every kind of stored
data exists) is run once; each test damages a copy of its store with SQL, as a hand edit would."""

from __future__ import annotations

import shutil
import sqlite3
import textwrap
from pathlib import Path

import pytest

from cutaway.cli.main import main
from tests.cutaway_command import cutaway as run_cutaway

EXPERIMENT = """\
name = "damage"
rounds = 3
warmup_rounds = 1

[probes]
calls = ["getpwnam"]

[[metrics]]
name = "files"
source = "file"
path = "."
series = true

[[variants]]
name = "a"
command = "getent passwd root"

[[variants]]
name = "b"
command = "getent passwd nobody"
"""


@pytest.fixture(scope="module")
def real_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding one real experiment, left "incomplete" (as after Ctrl-C) so that
    `run --resume` may take it."""
    directory = tmp_path_factory.mktemp("damaged-store")
    (directory / "experiment.toml").write_text(EXPERIMENT)
    db = directory / "real.db"
    done = run_cutaway("run", "experiment.toml", "--db", str(db), "-q", cwd=directory)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE experiments SET status = 'incomplete'")
    connection.close()  # and so checkpointed into the file that damaged() copies
    return db


def damaged(real_store: Path, tmp_path: Path, sql: str) -> Path:
    db = tmp_path / "damaged.db"
    shutil.copy(real_store, db)
    connection = sqlite3.connect(db)
    # A hand edit may bypass the schema's CHECK and foreign-key constraints, as these do.
    connection.executescript(
        "PRAGMA ignore_check_constraints = ON; PRAGMA foreign_keys = OFF;\n" + sql
    )
    connection.commit()
    connection.close()
    return db


def cutaway(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Status, standard output and standard error of the command, run in this process: a
    traceback would fail the test with the exception itself."""
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


ONE_RUN = "(SELECT MIN(id) FROM runs WHERE round_index >= 0)"

# name -> (SQL that damages the store, the column named, words of the problem)
DAMAGES = {
    "spec_json not JSON": (
        "UPDATE experiments SET spec_json = '{not json'",
        "experiments.spec_json",
        "not JSON",
    ),
    "spec_json not an object": (
        "UPDATE experiments SET spec_json = '[1, 2]'",
        "experiments.spec_json",
        "JSON array, not an object",
    ),
    "spec_json missing a key": (
        "UPDATE experiments SET spec_json = json_remove(spec_json, '$.variants')",
        "experiments.spec_json",
        "variants: missing",
    ),
    "spec_json variant missing its command": (
        "UPDATE experiments SET spec_json = json_remove(spec_json, '$.variants[1].command')",
        "experiments.spec_json",
        "variants[1].command: missing",
    ),
    "spec_json wrong type": (
        "UPDATE experiments SET spec_json = json_set(spec_json, '$.rounds', 'ten')",
        "experiments.spec_json",
        "rounds: text 'ten' is not an integer",
    ),
    "spec_json NULL where a number belongs": (
        "UPDATE experiments SET spec_json = json_set(spec_json, '$.margin', json('null'))",
        "experiments.spec_json",
        "margin: null is not a number",
    ),
    "spec_json negative count": (
        "UPDATE experiments SET spec_json = json_set(spec_json, '$.rounds', -3)",
        "experiments.spec_json",
        "rounds: -3 is below 0",
    ),
    "spec_json baseline no variant has": (
        "UPDATE experiments SET spec_json = json_set(spec_json, '$.baseline', 'zz')",
        "experiments.spec_json",
        "baseline: 'zz' is not one of the variants",
    ),
    "spec_json hooks of the wrong type": (
        "UPDATE experiments SET spec_json ="
        " json_set(spec_json, '$.variants[0].hooks', json('[1]'))",
        "experiments.spec_json",
        "variants[0].hooks: array",
    ),
    "spec_json unknown metric direction": (
        "UPDATE experiments SET spec_json = json_set(spec_json, '$.metrics[0].better', 'sideways')",
        "experiments.spec_json",
        "metrics[0].better: text 'sideways' is not one of lower, higher",
    ),
    "spec_json probe setting of the wrong type": (
        "UPDATE experiments SET spec_json = json_set(spec_json, '$.probes.calls', 5)",
        "experiments.spec_json",
        "probes.calls: 5 is not a list of names",
    ),
    "spec_json probe setting no probe writes": (
        "UPDATE experiments SET spec_json ="
        " json_set(spec_json, '$.probes.profile', json('{\"frequency_hz\": \"x\"}'))",
        "experiments.spec_json",
        'probes.profile.frequency_hz: "x" is not a frequency',
    ),
    "spec_json profile frequency beyond perf's": (
        "UPDATE experiments SET spec_json ="
        " json_set(spec_json, '$.probes.profile', json('{\"frequency_hz\": 1000000000}'))",
        "experiments.spec_json",
        "probes.profile.frequency_hz: 1000000000 is not a frequency",
    ),
    "spec_json profile unwinding no probe writes": (
        "UPDATE experiments SET spec_json ="
        " json_set(spec_json, '$.probes.profile', json('{\"call_graph\": \"lbr\"}'))",
        "experiments.spec_json",
        'probes.profile.call_graph: "lbr" is not one of',
    ),
    "spec_json profile phase that is no object": (
        "UPDATE experiments SET spec_json ="
        " json_set(spec_json, '$.probes.profile', json('{\"phases\": [3]}'))",
        "experiments.spec_json",
        "probes.profile.phases[0]: 3 is not an object",
    ),
    "spec_json profile phase that is no regular expression": (
        "UPDATE experiments SET spec_json = json_set(spec_json, '$.probes.profile',"
        ' json(\'{"phases": [{"name": "p", "frames": "("}]}\'))',
        "experiments.spec_json",
        "probes.profile.phases[0].frames: not a regular expression",
    ),
    "environment_json not JSON": (
        "UPDATE experiments SET environment_json = 'nope'",
        "experiments.environment_json",
        "not JSON",
    ),
    "unknown experiment status": (
        "UPDATE experiments SET status = 'bogus'",
        "experiments.status",
        "'bogus' is not one of running, complete, incomplete",
    ),
    "created_at of the wrong type": (
        "UPDATE experiments SET created_at = 'yesterday'",
        "experiments.created_at",
        "text 'yesterday' is not a number",
    ),
    "created_at beyond any date": (
        "UPDATE experiments SET created_at = 1e300",
        "experiments.created_at",
        "1e+300 is not a time from 1970 to 9999",
    ),
    "unknown run status": (
        f"UPDATE runs SET status = 'weird' WHERE id = {ONE_RUN}",
        "runs.status",
        "'weird' is not one of ok, failed",
    ),
    "round_index of the wrong type": (
        f"UPDATE runs SET round_index = 'x' WHERE id = {ONE_RUN}",
        "runs.round_index",
        "text 'x' is not an integer",
    ),
    "measurement of the wrong type": (
        f"UPDATE measurements SET value = 'fast' WHERE metric = 'wall' AND run_id = {ONE_RUN}",
        "measurements.value",
        "text 'fast' is not a number",
    ),
    "calibration of the wrong type": (
        "UPDATE calibrations SET median_wall_seconds = 'x'",
        "calibrations.median_wall_seconds",
        "text 'x' is not a number",
    ),
    "negative calibration count": (
        "UPDATE calibrations SET n = -5",
        "calibrations.n",
        "-5 is below 1",
    ),
    "probe overhead of the wrong type": (
        "UPDATE probes SET overhead_seconds = 'x'",
        "probes.overhead_seconds",
        "text 'x' is not a number",
    ),
    "negative run_data count": (
        "UPDATE run_data SET count = -1 WHERE kind = 'calls'",
        "run_data.count",
        "-1 is below 0",
    ),
    "truncated calls blob": (
        "UPDATE run_data SET data = substr(data, 1, 100) WHERE kind = 'calls'",
        "run_data.data",
        "damaged calls blob",
    ),
    "emptied calls blob": (
        "UPDATE run_data SET data = x'' WHERE kind = 'calls'",
        "run_data.count",
        "but the blob holds 0",
    ),
    "calls blob stored as text": (
        "UPDATE run_data SET data = 'hello' WHERE kind = 'calls'",
        "run_data.data",
        "text 'hello' is not a blob",
    ),
    "calls losses not JSON": (
        "UPDATE run_data SET data = CAST('xx' AS BLOB) WHERE kind = 'calls-losses'",
        "run_data.data",
        "is not a JSON object of counts",
    ),
    "truncated series blob": (
        "UPDATE run_data SET data = substr(data, 1, 7) WHERE kind = 'series'",
        "run_data.data",
        "a series blob of 7 bytes",
    ),
    "variant renamed in one table only": (
        "UPDATE variants SET name = 'c' WHERE position = 1",
        "variants.name",
        "the variants table names ['a', 'c']",
    ),
    "variant position out of range": (
        "UPDATE variants SET position = 7 WHERE position = 1",
        "variants.position",
        "7 where 1 belongs",
    ),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_store_is_named_by_experiment_column_and_problem(
    damage: str, real_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sql, column, problem = DAMAGES[damage]
    db = str(damaged(real_store, tmp_path, sql))
    for command in (
        ["report"],
        ["export", "--format", "json"],
        ["compare", "1", "1", "--format", "markdown"],
        ["run", "--resume", "1", "-q"],
    ):
        status, _, stderr = cutaway(capsys, *command, "--db", db)
        assert status == 2, (command, stderr)
        assert f"experiment #1 in {db} is damaged: {column}: " in stderr, (command, stderr)
        assert problem in stderr, (command, stderr)
        assert stderr.count("\n") == 1, stderr  # one message


@pytest.mark.parametrize("damage", ["created_at beyond any date", "measurement of the wrong type"])
def test_history_and_publish_name_the_damage_too(
    damage: str, real_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cutaway publish` formatted a created_at of 1e300 as a date: a traceback (found by a
    hostile re-run). Both history readers name the damage as every other reader does."""
    sql, column, problem = DAMAGES[damage]
    db = str(damaged(real_store, tmp_path, sql))
    for command in (["history", "damage"], ["publish", str(tmp_path / "site")]):
        status, _, stderr = cutaway(capsys, *command, "--db", db)
        assert status == 2, (command, stderr)
        assert f"experiment #1 in {db} is damaged: {column}: " in stderr, (command, stderr)
        assert problem in stderr and stderr.count("\n") == 1, (command, stderr)


def test_list_leaves_a_damaged_experiment_out_and_lists_the_others(
    real_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = textwrap.dedent("""\
        INSERT INTO experiments (name, status, created_at, spec_json, environment_json,
            cutaway_version)
        SELECT 'second', 'complete', created_at, spec_json, environment_json, cutaway_version
        FROM experiments WHERE id = 1;
        UPDATE experiments SET status = 'bogus' WHERE id = 1;
        """)
    db = str(damaged(real_store, tmp_path, copy))
    status, listed, stderr = cutaway(capsys, "list", "--db", db)
    assert status == 0, stderr
    assert "second" in listed and "damage" not in listed
    assert "cutaway: warning: left out of the list: experiment #1" in stderr
    assert "experiments.status: text 'bogus'" in stderr


def test_a_foreign_lease_with_a_damaged_heartbeat_is_refused_by_resume(
    real_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(
        damaged(
            real_store,
            tmp_path,
            "UPDATE experiments SET owner_host = 'elsewhere', owner_pid = 1, heartbeat_at = 'soon'",
        )
    )
    for resume in (["--resume"], ["--resume", "1"]):
        status, _, stderr = cutaway(capsys, "run", *resume, "--db", db)
        assert status == 2, stderr
        assert "experiments.heartbeat_at: text 'soon' is not a number" in stderr


# name -> (the stored wall time of one counted run, words of the problem). Each would reach the
# statistics as a traceback (a negative cost) or a numpy RuntimeWarning (an overflow).
MEASUREMENT_DAMAGES = {
    "negative wall time": ("-0.5", "-0.5 is negative, and wall cannot be"),
    "infinite wall time": ("9e999", "inf is not a finite number"),
    "wall time beyond any measurement": ("1e308", "1e+308 is beyond any measurement"),
    "wall time nearer zero than any measurement": ("1e-320", "is nearer zero than any"),
}


@pytest.mark.filterwarnings("error")  # a numpy RuntimeWarning must never reach the user
@pytest.mark.parametrize("damage", MEASUREMENT_DAMAGES)
def test_a_damaged_measurement_is_named_by_every_reader(
    damage: str, real_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    value, problem = MEASUREMENT_DAMAGES[damage]
    db = str(
        damaged(
            real_store,
            tmp_path,
            f"UPDATE measurements SET value = {value} WHERE metric = 'wall' AND run_id = {ONE_RUN}",
        )
    )
    (run_id,) = sqlite3.connect(db).execute(ONE_RUN.strip("()")).fetchone()
    for command in (
        ["report"],
        ["report", "--format", "csv"],
        ["export", "--format", "json"],
        ["export", "--format", "html"],
        ["export", "--format", "runs-csv"],
        ["compare", "1", "1", "--format", "markdown"],
    ):
        status, stdout, stderr = cutaway(capsys, *command, "--db", db)
        assert status == 2, (command, stderr)
        assert f"experiment #1 in {db} is damaged: measurements.value: run #{run_id}, wall" in (
            stderr
        ), (command, stderr)
        assert problem in stderr, (command, stderr)
        assert stderr.count("\n") == 1, stderr  # one message, no warning, no traceback
        assert stdout == ""
