"""The argparse type of every integer option (``--rounds``, ``--seed``, ``--connections``...):
argparse's own ``int`` quotes the whole text in its error, and raises past 4300 digits. The
range is checked after, by the spec's reader of the key the option sets (cutaway.spec.fields),
so that an option and its file key say the same."""

from __future__ import annotations

import argparse

from cutaway.visible import display

# More digits than any limit has (2**63 has 19): the text is refused as too large unread.
_MOST_DIGITS = 30


def integer(text: str) -> int:
    digits = text.strip().removeprefix("-").removeprefix("+")
    if not (digits.isascii() and digits.isdigit()):
        raise argparse.ArgumentTypeError(f"expected an integer, found {display(text)!r}")
    if len(digits) > _MOST_DIGITS:
        raise argparse.ArgumentTypeError(f"{display(text)} is far too large")
    return int(text)
