"""The runner and the analysis read the probes' plugins through cutaway.probes.core, which a
layer above provides: cutaway.api on import (and so the command line). Each case runs in a
fresh interpreter, since this test process had them provided by conftest.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cutaway.model import ProbeSpec, Spec, Variant
from cutaway.probes import core, registry
from cutaway.probes.calls.settings import with_calls
from cutaway.probes.core import NoPluginsProvided
from cutaway.probes.load.settings import LoadSpec, with_load


def _in_fresh_interpreter(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return result.stdout.strip()


def test_the_core_without_plugins_says_how_to_get_them() -> None:
    said = _in_fresh_interpreter(
        "from cutaway.probes import core\n"
        "import cutaway.compare, cutaway.runner.runner\n"
        "try:\n"
        "    core.plugins()\n"
        "except core.NoPluginsProvided as error:\n"
        "    print(error)\n"
    )
    assert "import cutaway.api" in said


def test_importing_the_library_hands_the_core_the_registered_plugins() -> None:
    names = _in_fresh_interpreter(
        "import cutaway.api\n"
        "from cutaway.probes import core\n"
        "print(' '.join(plugin.name for plugin in core.plugins()))\n"
    )
    assert names.split() == [plugin.name for plugin in registry.plugins()]


def test_the_registry_is_read_each_time_the_core_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "PLUGINS", registry.PLUGINS[:1])
    assert [plugin.name for plugin in core.plugins()] == [registry.PLUGINS[0].name]


def test_the_runner_builds_the_selected_probes_from_what_was_provided(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = Spec(
        name="p",
        variants=(Variant("v", ("true",)),),
        baseline="v",
        probes=with_calls(ProbeSpec(), ("getpwnam",)),
    )
    monkeypatch.setattr(core, "_source", None)
    with pytest.raises(NoPluginsProvided):
        core.build_probes(spec)
    monkeypatch.setattr(core, "_source", registry.plugins)
    probes = core.build_probes(spec)
    try:
        assert [type(probe).__module__ for probe in probes] == ["cutaway.probes.calls.capture"]
    finally:
        for probe in probes:
            probe.close()


def test_the_measured_phase_is_owned_by_a_selected_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner runs a load experiment's generator through the phase the load plugin owns,
    and the variants' own commands when no selected plugin owns one."""
    variant = Variant("v", ("true",))
    plain = Spec(name="p", variants=(variant,), baseline="v")
    loaded = with_load(plain, LoadSpec(targets={"v": "http://127.0.0.1:9/"}))
    assert core.measured_phase(plain) is None
    phase = core.measured_phase(loaded)
    assert type(phase).__module__ == "cutaway.probes.load.capture"
    monkeypatch.setattr(core, "_source", lambda: [registry.PLUGINS[1]])  # the load plugin's gone
    assert core.measured_phase(loaded) is None
