"""The order in which variants run within each round.

Every round runs each variant once. Orders come from a Williams design (Williams 1949, "Experimental
designs balanced for the estimation of residual effects of treatments", Australian Journal of
Scientific Research A2:149-168): over one block of k rounds (2k when k is odd) every variant takes
every position equally often and follows every other variant equally often, so a constant
position effect (the first run of a round finds colder caches) and a first-order carry-over
effect (a variant that heats the CPU slows the one after it) cancel out of the comparison. Each
block relabels the variants with a seeded random permutation, so the order keeps changing from
block to block while every block stays balanced, and a resumed experiment sees the same orders.
"""

from __future__ import annotations

import random
from functools import lru_cache


def williams_rows(k: int) -> list[list[int]]:
    """The rows of a Williams square for k treatments: k rows for even k, 2k rows for odd k."""
    return [williams_row(k, row) for row in range(williams_row_count(k))]


def williams_row_count(k: int) -> int:
    if k < 1:
        raise ValueError("need at least one variant")
    return 2 * k if k % 2 == 1 and k > 1 else k


def williams_row(k: int, row: int) -> list[int]:
    """One row of the Williams square: a round needs only its own, and the whole square of
    thousands of variants is millions of numbers (seconds of work in every round)."""
    if not 0 <= row < williams_row_count(k):
        raise ValueError(f"a Williams square for {k} treatments has no row {row}")
    first = [0]  # 0, 1, k-1, 2, k-2, ...
    low, high = 1, k - 1
    while len(first) < k:
        if len(first) % 2 == 1:
            first.append(low)
            low += 1
        else:
            first.append(high)
            high -= 1
    shifted = [(value + row % k) % k for value in first]
    return shifted if row < k else shifted[::-1]


def round_order(k: int, round_index: int, seed: int) -> list[int]:
    """Variant indices (0..k-1) in the order they run in round ``round_index``.

    Warmup rounds have negative indices and get orders of their own from the same scheme."""
    block, row = divmod(round_index, williams_row_count(k))
    relabel = _relabelling(k, block, seed)
    return [relabel[value] for value in williams_row(k, row)]


@lru_cache(maxsize=4)
def _relabelling(k: int, block: int, seed: int) -> tuple[int, ...]:
    """The seeded permutation of one block, made once for its rounds: seeding a generator
    costs more than the rest of a round's bookkeeping."""
    relabel = list(range(k))
    if k > 1:  # one variant: every block is its own round, and there is nothing to shuffle
        random.Random(f"{seed}:{block}").shuffle(relabel)
    return tuple(relabel)
