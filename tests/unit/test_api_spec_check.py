"""api.run checks a Spec built in Python before anything runs or is stored: values
the store would read back as damaged, numbers past the limits, and text the store cannot write
were stored first (the experiment then 'damaged') or failed half-way (OverflowError,
UnicodeEncodeError)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cutaway import api
from cutaway.model import Spec, Variant

SPEC = Spec(name="api", variants=(Variant("a", ("true",)),), baseline="a", rounds=1)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"rounds": -1}, "spec: rounds: -1 is below 0"),
        ({"rounds": 0}, "spec: rounds: expected at least 1, found 0"),
        ({"timeout_seconds": float("nan")}, "spec: timeout_seconds: nan is not a finite number"),
        ({"timeout_seconds": 1e300}, "spec: timeout_seconds: expected at most 604800, found"),
        ({"seed": 2**70}, "spec: seed: expected at most 9223372036854775807, found"),
        ({"confidence": 2.0}, "spec: confidence: 2.0 is not a confidence level between 0 and 1"),
        ({"baseline": "zz"}, "spec: baseline: 'zz' is not one of the variants"),
        ({"name": "x\udcff"}, "spec: cannot be stored: 'utf-8' codec can't encode"),
        # A plugin's table it would read back as the store's damage (the load plugin's).
        (
            {"plugin_tables": (("load", {"targets": {"a": "ftp://x"}}),)},
            "spec: load.targets.a: ftp:// is not supported",
        ),
    ],
)
def test_a_spec_that_cannot_be_run_is_refused_before_anything_is_stored(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    db = tmp_path / "store.db"
    with pytest.raises(api.SpecValueError) as error:
        api.run(dataclasses.replace(SPEC, **changes), db=db)  # type: ignore[arg-type]
    assert str(error.value).startswith(message)
    assert not db.exists()
