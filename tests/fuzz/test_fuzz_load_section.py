"""Fuzzing the ``[load]`` section and its targets: whatever ``[load]`` holds and
whatever a target or a ``--url`` says, reading it gives a valid load experiment or a SpecError
(exit 2) naming the key or the option; never another exception. A target that is accepted is
one the generator can take: no spaces or control characters, no credentials, no fragment, a
port in 1-65535; and a refused target holding a password never shows it."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from fuzzing import no_hang
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_spec_loader import TOML_VALUES, toml_value

from cutaway.probes.load.experiment_file import (
    LOAD_KEYS,
    MAX_LOAD_CONNECTIONS,
    MAX_LOAD_PHASE_SECONDS,
    MAX_LOAD_THREADS,
    MAX_REQUEST_TIMEOUT_SECONDS,
    quick_load,
    read_target_option,
)
from cutaway.probes.load.settings import LOAD_PROTOCOLS, LoadTarget, load_settings
from cutaway.spec import SpecError, load_spec

SECRET = "s3cr3t"
# Pieces of URLs, so that the generated targets are near-misses rather than noise.
URL_PIECES = [
    "http://", "https://", "memcached://", "127.0.0.1", "localhost", "[::1]", "[::1", "::1",
    "[fe80::1%eth0]", "h", ":", ":8080", ":0", ":65536", ":99999999999999999999", "/", "/x",
    "?q=1", "#frag", "@", f"user:{SECRET}@", " ", "\t", "\r\n", "\x1b[2J", "\x00", "é", "%20",
    "..", ".", "-", "_", "a" * 70, "{port}",
]  # fmt: skip
URLS = st.lists(st.sampled_from(URL_PIECES) | st.text(max_size=4), max_size=8).map("".join)
NUMBERS = (
    st.integers(-(2**70), 2**70)
    | st.floats()
    | st.sampled_from(["1s", "0s", "1e300s", "99999999999h", "250ms", "-1s", "", "5"])
)
LOAD_VALUES: dict[str, Any] = {
    "target": URLS,
    "pid_file": st.text(max_size=8),
    "protocol": st.sampled_from([*LOAD_PROTOCOLS, "HTTP", ""]) | TOML_VALUES,
    **{
        key: NUMBERS | TOML_VALUES
        for key in (
            "connections",
            "rate",
            "duration",
            "requests",
            "warmup",
            "timeout",
            "threads",
            "ready_timeout",
        )
    },
    "new_connection": st.booleans() | TOML_VALUES,
    "server_metrics": st.booleans() | TOML_VALUES,
}


@st.composite
def load_tables(draw: st.DrawFn) -> dict[str, object]:
    keys = draw(st.lists(st.sampled_from(LOAD_KEYS), unique=True, max_size=len(LOAD_KEYS)))
    table = {key: draw(LOAD_VALUES[key]) for key in keys}
    if draw(st.booleans()):
        table["target"] = draw(URLS)
    return table


def assert_usable(target_text: str, protocol: str) -> None:
    """What the generator (native/cw_load.c) needs of a target the spec accepted."""
    assert target_text.isascii() and target_text.isprintable(), target_text
    assert not any(c.isspace() for c in target_text) and "#" not in target_text, target_text
    assert "@" not in target_text.split("://")[-1].split("/")[0], target_text
    target = LoadTarget.parse(target_text)
    assert 0 < target.port < 65536 and target.host and target.path.startswith("/")
    if protocol == "memcached":
        assert len(target.path) <= 250


def check_file(table: dict[str, object]) -> None:
    body = "".join(f'"{key}" = {toml_value(value)}\n' for key, value in table.items())
    text = f'version = 1\nname = "load"\n[[variants]]\nname = "a"\n[load]\n{body}'
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "experiment.toml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            with no_hang():
                spec = load_spec(path)
        except SpecError as error:
            assert str(error).startswith(str(path)), str(error)
            assert error.key is not None or error.line is not None, repr(error)
            assert SECRET not in str(error), str(error)
            return
    load = load_settings(spec)
    assert load is not None
    assert 1 <= load.connections <= MAX_LOAD_CONNECTIONS
    assert load.threads is None or 1 <= load.threads <= MAX_LOAD_THREADS
    assert load.duration_seconds is None or 0 < load.duration_seconds <= MAX_LOAD_PHASE_SECONDS
    assert 0 <= load.warmup_seconds <= MAX_LOAD_PHASE_SECONDS
    assert 0 < load.request_timeout_seconds <= MAX_REQUEST_TIMEOUT_SECONDS
    for variant in spec.variants:
        assert_usable(load.targets[variant.name], load.protocol)
        assert all("\0" not in argument for argument in variant.command)
    assert all("\0" not in path for path in load.pid_files.values())


@given(load_tables())
def test_a_load_section_loads_or_is_refused_with_its_key(table: dict[str, object]) -> None:
    check_file(table)


@given(URLS, st.sampled_from(LOAD_PROTOCOLS))
def test_a_url_option_is_usable_or_refused_naming_the_option(url: str, protocol: str) -> None:
    try:
        with no_hang():
            quick_load([url], protocol=protocol)
            read_target_option(url, protocol)
    except SpecError as error:
        assert error.key == "--url", repr(error)
        assert SECRET not in str(error), str(error)
        return
    assert_usable(url, protocol)


@given(st.text(max_size=40))
def test_any_text_as_a_url_is_usable_or_refused(url: str) -> None:
    try:
        read_target_option(url)
    except SpecError as error:
        assert error.key == "--url"
        return
    assert_usable(url, "http")
