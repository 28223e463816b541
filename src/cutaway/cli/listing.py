"""The store every command uses unless told ($CUTAWAY_DB, else DEFAULT_DB under the current
directory) and `cutaway list`'s lines. Imported by the fast entry point (cli/main.py), which
answers `list` without the parser, so it imports only os at first."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which costs start-up time
if TYPE_CHECKING:
    from cutaway.store.listing import ListingRow

# Every command's --db defaults to this variable, else to DEFAULT_DB under the current directory
# (cutaway.api.DEFAULT_DB, spelled here without pathlib; a test checks that they agree).
DB_VARIABLE = "CUTAWAY_DB"
DEFAULT_DB = ".cutaway/cutaway.db"


def default_db() -> str:
    return os.environ.get(DB_VARIABLE) or DEFAULT_DB


def print_listing(rows: list[ListingRow], db: str) -> None:
    """`cutaway list`: one line per experiment, newest first; one line each whatever a name
    holds (a newline in it is shown as "\\n", an escape sequence as "\\x1b"), and at most
    200 characters of it."""
    from cutaway.visible import display, visible

    if not rows:
        if "://" in db:  # a postgresql:// URL: never its password
            from cutaway.store.location import shown

            db = shown(db)
        print(visible(f"no experiments in {db}"))
    for experiment_id, name, status, _created, label, n_variants, n_runs in rows:
        # A name or label of megabytes (a long command) is cut short, as every message does.
        labelled = f"  [{display(label)}]" if label else ""
        print(
            visible(
                f"#{experiment_id:<4} {status:<10} {n_variants} variants {n_runs:>6} runs  "
                f"{display(name)}{labelled}"
            )
        )
