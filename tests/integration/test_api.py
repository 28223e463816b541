"""cutaway as a library: run a spec and load the stored experiment as arrays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cutaway import api
from cutaway.model import Verdict
from cutaway.spec import quick_spec


def test_run_then_load_arrays_and_analysis(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    spec = quick_spec(["true", "sleep 0.01"], ["t", "s"], rounds=12, warmup_rounds=0)
    outcome = api.run(spec, db, label="v1")
    assert outcome.status == "complete"

    data = api.load(str(outcome.experiment_id), db)
    assert data.experiment.label == "v1"
    walls = data.values("wall")
    assert set(walls) == {"t", "s"}
    assert len(walls["t"]) == len(walls["s"]) == 12
    assert (walls["s"] >= 0.01).all()
    rounds, names, table = data.paired("wall")
    assert list(rounds) == list(range(12)) and names == ("t", "s") and table.shape == (12, 2)
    assert np.isfinite(table).all()

    analysis = api.analyze("latest", db)
    wall = [c for c in analysis.comparisons if c.metric == "wall"]
    assert wall[0].verdict is Verdict.REGRESSED


def test_an_int_id_and_an_unknown_metric(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    spec = quick_spec(["true"], ["t"], rounds=2, warmup_rounds=0)
    outcome = api.run(spec, db)

    data = api.load(outcome.experiment_id, db)  # an int, as `cutaway list` shows it
    assert data.experiment.id == outcome.experiment_id
    assert api.analyze(outcome.experiment_id, db).experiments[0].id == outcome.experiment_id
    assert "wall" in data.metric_names() and "user" in data.metric_names()
    with pytest.raises(KeyError, match=r"no metric 'nosuchmetric'.*wall"):
        data.values("nosuchmetric")
    with pytest.raises(TypeError):
        api.load(True, db)  # type: ignore[arg-type]


def test_the_default_store_is_the_clis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without db=, the library reads the store `cutaway run` wrote: $CUTAWAY_DB, else
    .cutaway/cutaway.db under the current directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CUTAWAY_DB", str(tmp_path / "elsewhere.db"))
    outcome = api.run(quick_spec(["true"], ["t"], rounds=2, warmup_rounds=0))
    assert (tmp_path / "elsewhere.db").exists()
    assert not (tmp_path / ".cutaway").exists()
    assert api.load(outcome.experiment_id).experiment.id == outcome.experiment_id
    monkeypatch.delenv("CUTAWAY_DB")
    api.run(quick_spec(["true"], ["t"], rounds=2, warmup_rounds=0))
    assert api.load(1, tmp_path / ".cutaway" / "cutaway.db").experiment.id == 1
