"""A store whose schema version (PRAGMA user_version) was reset or made negative by hand is
named as such and left as it is. Version 0 made cutaway create its tables again
("table experiments already exists"), a negative one ran the last migrations again
("duplicate column name"): SQLite's words, not the problem."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from cutaway.store import Store, StoreError


@pytest.mark.parametrize(
    ("version", "problem"),
    [
        (0, "has store schema version 0 (PRAGMA user_version) but holds cutaway's tables"),
        (-3, "has store schema version -3 (PRAGMA user_version), which no cutaway writes"),
    ],
)
def test_a_damaged_schema_version_is_named_and_nothing_changes(
    tmp_path: Path, version: int, problem: str
) -> None:
    db = tmp_path / "store.db"
    Store(db).close()
    connection = sqlite3.connect(db)
    connection.execute(f"PRAGMA user_version = {version}")
    connection.execute("PRAGMA journal_mode = DELETE")  # one file to compare
    connection.close()
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    with pytest.raises(StoreError) as error:
        Store(db)
    assert f"{db} {problem}" in str(error.value)
    assert "(the database was not changed)" in str(error.value)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
