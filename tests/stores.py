"""Reaching a store's database behind the Store's back, on either engine, as a hand edit or
another program would: for tests that check what is stored, or that damage it on purpose."""

from __future__ import annotations

import sqlite3
from typing import Any

from cutaway.store import Store


def raw_execute(store: Store, sql: str, parameters: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one statement (``?`` placeholders) in its own committed transaction; its rows."""
    if store.engine == "sqlite":
        with sqlite3.connect(store.path) as connection:
            rows = connection.execute(sql, parameters).fetchall()
        connection.close()
        return rows
    import psycopg

    # store.location hides only a password, and the tests' socket URLs have none.
    with psycopg.connect(store.location, autocommit=True) as pg:
        cursor = pg.execute(sql.replace("?", "%s"), parameters or None)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []
