"""Call positions and summaries from stored blobs (cutaway.probes.calls.analysis), against numpy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cutaway.compare import analyze
from cutaway.model import ProbeSpec, Run, RunData, RunStatus, Spec, Variant
from cutaway.probes import timed_calls as calls_blob
from cutaway.probes.calls.result import calls_result
from cutaway.probes.calls.settings import with_calls
from cutaway.probes.timed_calls import VERSION_1_DTYPE, ProcessCalls
from cutaway.store import Store, StoreError

SPEC = Spec(
    name="t",
    variants=(Variant("a", ("x",)),),
    baseline="a",
    rounds=2,
    warmup_rounds=0,
    probes=with_calls(ProbeSpec(), ("getpwnam",)),
)


def store_with_data(tmp_path: Path, rounds: list[list[RunData]]) -> tuple[Store, int]:
    """A store holding one run of variant a per round, with that round's probe data."""
    store = Store(tmp_path / "db")
    experiment_id = store.create_experiment(SPEC, {}, None, "test")
    for round_index, data in enumerate(rounds):
        run = Run("a", round_index, 0, RunStatus.OK, 0, None, {"wall": 0.1}, 0.0)
        store.add_run(experiment_id, run, data)
    return store, experiment_id


def store_with(tmp_path: Path, blobs: list[bytes]) -> tuple[Store, int]:
    """Each blob stored as the probes store it, with the number of calls it holds (0 for one
    this cutaway cannot read)."""
    return store_with_data(
        tmp_path, [[RunData("calls", "getpwnam", calls_in(b), b)] for b in blobs]
    )


def calls_in(blob: bytes) -> int:
    try:
        return len(calls_blob.decode(blob))
    except calls_blob.CallsBlobError:
        return 0


def test_positions_and_summaries_from_blobs_of_both_versions_equal_numpy(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    durations = [rng.integers(100, 90_000, size) for size in (1000, 7, 2001)]
    # Round 0, version 1: process 0 made 1000 calls, process 1 seven.
    old = np.zeros(1007, dtype=VERSION_1_DTYPE)
    old["process"][1000:] = 1
    old["call_index"] = np.concatenate([np.arange(1, 1001), np.arange(1, 8)])
    old["duration_ns"] = np.concatenate(durations[:2])
    # Round 1, version 2: one process with 2001 calls.
    new = ProcessCalls(0, np.arange(1, 2002), durations[2], np.full(2001, -1), np.zeros(2001))
    store, experiment_id = store_with(tmp_path, [old.tobytes(), calls_blob.encode([new])])

    analysis = analyze(store, experiment_id, resamples=100)
    summaries = {c.position: c for c in calls_result(analysis).calls}

    seconds = [d / 1e9 for d in durations]
    expected = {
        "1": [s[0] for s in seconds],
        "2": [s[1] for s in seconds],
        "later": np.concatenate([s[2:] for s in seconds]),
        "all": np.concatenate(seconds),
    }
    for position, values in expected.items():
        got = summaries[position]
        assert (got.n, got.total, got.mean) == (len(values), np.sum(values), np.mean(values))
        assert (got.median, got.p99) == (np.median(values), np.percentile(values, 99))
        assert (got.min, got.max, got.sd) == (
            np.min(values),
            np.max(values),
            np.std(values, ddof=1),
        )


def test_a_blob_from_a_newer_cutaway_stops_the_analysis_in_words(tmp_path: Path) -> None:
    blob = calls_blob.encode([ProcessCalls(0, np.ones(1), np.ones(1), np.ones(1), np.ones(1))])
    newer = blob[:8] + (calls_blob.VERSION + 1).to_bytes(4, "little") + blob[12:]
    store, experiment_id = store_with(tmp_path, [newer])
    with pytest.raises(StoreError, match=r"'a' round 0, calls of getpwnam: .*upgrade cutaway"):
        analyze(store, experiment_id, resamples=100)


def test_lost_call_records_and_unseen_processes_are_said(tmp_path: Path) -> None:
    rounds = []
    for processes, unstarted in ((2, 0), (0, 0), (0, 1)):
        losses = {"processes": processes, "truncated_bytes": 40, "dropped": 1}
        if unstarted:  # written since the count existed: older rows lack it
            losses["unstarted"] = unstarted
        rounds.append([RunData("calls-losses", "losses", processes, json.dumps(losses).encode())])
    store, experiment_id = store_with_data(tmp_path, rounds)
    cautions = {c.kind: c.message for c in analyze(store, experiment_id, resamples=100).cautions}
    assert "120 bytes" in cautions["calls-lost"] and "3 calls" in cautions["calls-lost"]
    # A run whose one process was killed before its file started was not unseen.
    assert "in 1 runs" in cautions["calls-unseen"] and "setgid" in cautions["calls-unseen"]
    assert cautions["calls-unstarted"].startswith("1 processes were killed while creating")
