"""A hyperfine user's scripts read cutaway's --export-json unchanged: its ``results`` list.

``hyperfine_statistics`` below reads the file exactly as hyperfine's own
scripts/advanced_statistics.py and plot_whisker.py do (``json.load(f)["results"]``, then each
entry's ``command``, ``times``, ``mean``, ``stddev``, ``median``, ``min``, ``max``, ``user``,
``system``, ``exit_codes`` and, with a parameter scan, ``parameters``)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from tests.cutaway_command import cutaway as run_cutaway


def cutaway(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """cutaway with its JSON export written to ``cwd/x.json``."""
    return run_cutaway(*args, "--export-json", "x.json", cwd=cwd)


def hyperfine_statistics(path: Path) -> list[dict[str, Any]]:
    """What hyperfine's advanced_statistics.py computes from its input, per command."""
    with open(path) as f:
        results = json.load(f)["results"]
    out = []
    for result in results:
        times = np.array(result["times"])
        out.append(
            {
                "command": result["command"],
                "runs": len(times),
                "mean": np.mean(times),
                "stddev": np.std(times, ddof=1),
                "median": np.median(times),
                "min": np.min(times),
                "max": np.max(times),
                "p05": np.percentile(times, 5),
                "result": result,
            }
        )
    return out


def test_results_read_as_hyperfine_scripts_read_them(tmp_path: Path) -> None:
    run = cutaway("run", "--rounds", "5", "-c", "sleep 0.01", "-c", "sleep 0.012", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    stats = hyperfine_statistics(tmp_path / "x.json")
    assert [s["command"] for s in stats] == ["sleep 0.01", "sleep 0.012"]
    for s in stats:
        result = s["result"]
        assert s["runs"] == 5 and result["exit_codes"] == [0] * 5
        for key in ("mean", "stddev", "median", "min", "max"):
            assert math.isclose(result[key], s[key], rel_tol=1e-12), key
        assert result["min"] >= 0.01  # seconds, as hyperfine: never scaled
        assert 0 <= result["user"] < result["mean"] and 0 <= result["system"] < result["mean"]
        assert "parameters" not in result


def test_a_parameter_scan_carries_its_parameters(tmp_path: Path) -> None:
    scan = ("--parameter-scan", "n", "1", "2", "-c", "sleep 0.00{n}")
    run = cutaway("run", "--rounds", "2", *scan, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    results = json.loads((tmp_path / "x.json").read_text())["results"]
    assert [r["command"] for r in results] == ["sleep 0.001", "sleep 0.002"]
    assert [r["parameters"] for r in results] == [{"n": "1"}, {"n": "2"}]
