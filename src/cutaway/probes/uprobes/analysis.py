"""Stored calls per probed function (cutaway.probes.uprobes.counts) -> per variant, outermost
function, binary and function: the calls per operation and per counted run, and the mean time
per call."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from cutaway.model import FunctionCalls
from cutaway.probes.uprobes import counts
from cutaway.store import DamagedStoreError, Store


def function_calls(
    store: Store, experiment_id: int, variants: Sequence[str]
) -> list[FunctionCalls]:
    """In the variants' order, then by outermost function and by first appearance."""
    runs: dict[str, int] = defaultdict(int)
    operations: dict[tuple[str, str], int] = defaultdict(int)
    totals: dict[tuple[str, str, str, str], list[int]] = {}
    for item in store.run_data(experiment_id, counts.KIND):
        try:
            counted = counts.decode(item.data)
        except counts.DamagedCounts as error:
            where = f"{item.variant!r} round {item.round_index}, {counts.KIND}"
            raise DamagedStoreError(
                store.location, experiment_id, "run_data.data", f"{where}: {error}"
            ) from None
        runs[item.variant] += 1
        for root, number in counted.operations.items():
            operations[(item.variant, root)] += number
        for (root, binary, function), (calls, ns) in counted.calls.items():
            total = totals.setdefault((item.variant, root, binary, function), [0, 0])
            total[0] += calls
            total[1] += ns
    order = {name: index for index, name in enumerate(variants)}
    found = []
    for (variant, root, binary, function), (calls, ns) in totals.items():
        per_root = operations[(variant, root)]
        found.append(
            FunctionCalls(
                variant=variant,
                operation=root,
                binary=binary,
                function=function,
                runs=runs[variant],
                operations=per_root,
                calls=calls,
                calls_per_operation=calls / per_root if per_root else float("nan"),
                calls_per_run=calls / runs[variant],
                seconds_per_call=ns / calls / 1e9 if calls else float("nan"),
            )
        )
    roots = list(dict.fromkeys(f.operation for f in found))
    found.sort(key=lambda f: (order.get(f.variant, len(order)), roots.index(f.operation)))
    return found
