"""`python -m cutaway` is the `cutaway` command."""

from cutaway.cli.main import run

run()
