"""read_summary on a summary recorded from cw_load (tests/fixtures/load/summary-v1.json, an
open-loop run against nginx), and on damaged ones: every problem named by its field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cutaway.probes.load.generator import (
    GeneratorError,
    LoadSettings,
    LoadSummaryError,
    read_summary,
    run_generator,
)
from tests.hostile import HOSTILE

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "load" / "summary-v1.json"


def recorded() -> dict[str, Any]:
    return json.loads(RECORDED.read_text())  # type: ignore[no-any-return]


def test_the_recorded_summary_reads_into_typed_values() -> None:
    result = read_summary(RECORDED.read_text())
    assert result.mode == "open" and result.protocol == "http" and result.rate == 500.0
    assert result.requests == result.latency.corrected.total.count
    assert result.errors.total == 0
    data = recorded()
    total = data["latency"]["corrected"]["total"]
    assert result.latency.corrected.total.percentile_seconds(99) == pytest.approx(
        total["percentiles"]["99"]
    )
    assert result.generator.peak_rss_bytes == data["generator"]["peak_rss_bytes"] > 0


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (lambda d: d.pop("requests"), "load summary.requests: missing"),
        (lambda d: d.update(format="other"), "format"),
        (lambda d: d.update(version=3), "version 3 is not 1 or 2"),
        (lambda d: d.update(version=2), "load summary.interrupted: missing"),
        (lambda d: d.update(version=2, interrupted="yes"), "load summary.interrupted"),
        (lambda d: d.update(mode="sideways"), "load summary.mode"),
        (lambda d: d.update(requests=-1), "load summary.requests"),
        (lambda d: d.update(requests=True), "load summary.requests"),
        (lambda d: d.update(throughput="fast"), "load summary.throughput"),
        (lambda d: d["errors"].pop("reset"), "load summary.errors.reset"),
        (lambda d: d["generator"].update(saturated=1), "load summary.generator.saturated"),
        (
            lambda d: d["latency"]["uncorrected"]["first_byte"].update(hdr="HISTxx"),
            "load summary.latency.uncorrected.first_byte.hdr",
        ),
        (
            lambda d: d["latency"]["corrected"]["total"].update(count=1),
            "load summary.latency.corrected.total.count",
        ),
        (lambda d: d.update(latency=[]), "load summary.latency: expected an object"),
    ],
)
def test_a_damaged_summary_names_its_field(damage: Any, named: str) -> None:
    data = recorded()
    damage(data)
    with pytest.raises(LoadSummaryError) as raised:
        read_summary(json.dumps(data))
    assert named in str(raised.value)


def test_version_2_says_whether_the_run_was_interrupted() -> None:
    assert read_summary(RECORDED.read_text()).interrupted is False  # version 1: never
    data = recorded()
    data.update(version=2, interrupted=True)
    assert read_summary(json.dumps(data)).interrupted is True
    data.update(interrupted=False)
    assert read_summary(json.dumps(data)).interrupted is False


def test_not_json_is_a_clear_error() -> None:
    with pytest.raises(LoadSummaryError, match="not JSON"):
        read_summary("cw_load: something\n")


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_target_is_data(hostile: str) -> None:
    data = recorded()
    data["target"] = hostile
    assert read_summary(json.dumps(data)).target == hostile


def test_settings_become_the_flags() -> None:
    settings = LoadSettings(
        target="127.0.0.1:8080", rate=2000, duration=5, new_connection=True, path="/a b"
    )
    argv = settings.argv()
    assert argv[argv.index("--rate") + 1] == "2000.0"
    assert "--new-connection" in argv and "--requests" not in argv
    assert argv[argv.index("--path") + 1] == "/a b"  # one argument, checked by cw_load
    assert settings.mode == "open"


def test_a_generator_that_fails_without_a_summary_is_a_clear_error(tmp_path: Path) -> None:
    fake = tmp_path / "cw_load"  # a seam: an executable that fails as cw_load would on ENOMEM
    fake.write_text("#!/bin/sh\necho 'cw_load: out of memory' >&2\nexit 1\n")
    fake.chmod(0o755)
    settings = LoadSettings(target="127.0.0.1:1", duration=1)
    with pytest.raises(GeneratorError, match="out of memory"):
        run_generator(settings, timeout=10, executable=str(fake))
    fake.write_text("#!/bin/sh\nsleep 30\n")
    with pytest.raises(GeneratorError, match=r"did not finish within 0\.5 s"):
        run_generator(settings, timeout=0.5, executable=str(fake))
