"""The order in which variants run within each round.

Every round runs each variant once. Orders come from a Williams design (Williams 1949, "Experimental
designs balanced for the estimation of residual effects of treatments", Australian Journal of
Scientific Research A2:149-168): over one block of k rounds (2k when k is odd) every variant takes
every position equally often and follows every other variant equally often, so a constant
position effect (the first run of a round finds colder caches) and a first-order carry-over
effect (a variant that heats the CPU slows the one after it) cancel out of the comparison.

Blocks come in cycles of k. A cycle draws a seeded random permutation of the variants, and its
j-th block relabels the square with that permutation shifted by j places, so over a cycle every
variant takes every place of the block (every round of it, every position in the round) exactly
once. An effect that repeats with the block's period, whatever it is tied to (for 2 variants the
block is 4 runs: x y | y x), then cancels too: relabelled independently, block after block, such
an effect would favour a variant drawn at random in each block, and over a whole experiment
leave an offset fixed by the seed, the same in every experiment run with that seed. The order
still changes from cycle to cycle, and a resumed experiment sees the same orders.
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
    if k == 1:
        return [0]  # one variant (`cutaway run -c CMD`): asked before each of its runs
    block, row = divmod(round_index, williams_row_count(k))
    cycle, turn = divmod(block, k)
    relabel = _relabelling(k, cycle, seed)
    return [relabel[(value + turn) % k] for value in williams_row(k, row)]


@lru_cache(maxsize=4)
def _relabelling(k: int, cycle: int, seed: int) -> tuple[int, ...]:
    """The seeded permutation of one cycle of blocks, made once for its rounds: seeding a
    generator costs more than the rest of a round's bookkeeping."""
    relabel = list(range(k))
    if k > 1:  # one variant: there is nothing to shuffle
        random.Random(f"{seed}:{cycle}").shuffle(relabel)
    return tuple(relabel)
