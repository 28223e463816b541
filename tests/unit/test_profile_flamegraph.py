"""Flame graphs of stored profiles: widths per profiled run, a differential graph drawn on the
union of both profiles (what vanished is there as well as what appeared), well-formed SVG in
which no string from a profile becomes markup, and the CLI's export of both."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from cutaway.cli import main as entry
from cutaway.model import Run, RunData, RunStatus, Spec, Variant
from cutaway.probes.profile import records
from cutaway.probes.profile.flamegraph import (
    _SCRIPT,
    fold_unsymbolized,
    render_flamegraph,
    render_flamegraph_diff,
    variant_stacks,
)
from cutaway.store import Store
from cutaway.visible import visible
from tests.hostile import HOSTILE

SVG = "{http://www.w3.org/2000/svg}"
# Every element a flame graph may hold before its script runs: anything else is injected.
ALLOWED = {"svg", "style", "rect", "text", "g", "defs", "linearGradient", "stop", "script"}
NASTY = (*HOSTILE, "</script><img src=x onerror=alert(1)>", "]]><x/>", "\"&amp;'", "a\x00\ufffe")


def _parse(document: str) -> ElementTree.Element:
    root = ElementTree.fromstring(document.encode())  # raises on anything not well-formed
    for element in root.iter():
        assert element.tag.startswith(SVG), element.tag
        assert element.tag[len(SVG) :] in ALLOWED, element.tag
    assert len(root.findall(f"{SVG}script")) == 1
    return root


def _data(document: str) -> dict[str, object]:
    script = _parse(document).find(f"{SVG}script")
    assert script is not None and script.text is not None
    text = script.text.strip()
    assert text.endswith(");")
    value = json.loads(text[text.rindex("})(") + 3 : -2])
    assert isinstance(value, dict)
    return value


def _tree(data: dict[str, object], diff: bool = False) -> dict[str, object]:
    """The drawn tree as {path: values}, path joined with ';'."""
    names = data["names"]
    assert isinstance(names, list)
    found: dict[str, object] = {}

    def walk(node: list[object], prefix: str) -> None:
        index = node[0]
        assert isinstance(index, int)
        path = f"{prefix};{names[index]}" if prefix else str(names[index])
        found[path] = tuple(node[1:3]) if diff else node[1]
        children = node[-1]
        assert isinstance(children, list)
        for child in children:
            walk(child, path)

    tree = data["tree"]
    assert isinstance(tree, list)
    walk(tree, "")
    return found


def test_a_flame_graph_draws_inclusive_weights() -> None:
    stacks = {"on-CPU;prog;main;a": 3.0, "on-CPU;prog;main;b": 1.0, "on-CPU;prog;main": 0.5}
    data = _data(render_flamegraph(stacks, title="t", subtitle="s", unit="seconds"))
    assert _tree(data) == {
        "all": 4.5,
        "all;on-CPU": 4.5,
        "all;on-CPU;prog": 4.5,
        "all;on-CPU;prog;main": 4.5,
        "all;on-CPU;prog;main;a": 3.0,
        "all;on-CPU;prog;main;b": 1.0,
    }
    assert data["unit"] == "seconds" and data["diff"] is None and data["depth"] == 5


def test_the_differential_graph_keeps_what_vanished_and_what_appeared() -> None:
    baseline = {"p;main;old": 2.0, "p;main;both": 1.0}
    variant = {"p;main;new": 0.5, "p;main;both": 3.0}
    document = render_flamegraph_diff(
        baseline, variant, title="t", subtitle="s", unit="seconds", names=("base", "var")
    )
    data = _data(document)
    assert data["diff"] == ["base", "var"]
    assert _tree(data, diff=True) == {
        "all": (3.0, 3.5),
        "all;p": (3.0, 3.5),
        "all;p;main": (3.0, 3.5),
        "all;p;main;both": (1.0, 3.0),
        "all;p;main;new": (0.0, 0.5),  # appeared: drawn, though the baseline has none
        "all;p;main;old": (2.0, 0.0),  # vanished: drawn, though the variant has none
    }
    assert "only in baseline" in document and "only in variant" in document  # the legend


def test_runs_of_unsymbolized_frames_are_drawn_as_one() -> None:
    assert fold_unsymbolized(
        ["squid", "[unknown]", "[unknown]", "[unknown]", "regexec", "[unknown]", "[unknown]"]
    ) == ["squid", "[unknown]", "regexec", "[unknown]"]
    # A file without the function's name is as unnamed; a run of two different ones is not one.
    assert fold_unsymbolized(["bash", "[bash]", "[bash]", "[libc.so.6]", "[bash]"]) == [
        "bash", "[bash]", "[libc.so.6]", "[bash]",
    ]  # fmt: skip
    assert fold_unsymbolized(["memfd", "[unknown] ", "[unknown] ", "f_[k]"]) == [
        "memfd",
        "[unknown] ",
        "f_[k]",
    ]
    assert fold_unsymbolized(["[unknown]_[k]", "[unknown]_[k]", "f_[k]"]) == [
        "[unknown]_[k]",
        "f_[k]",
    ]
    # Named frames repeat when a function recurses: each call is a frame of its own.
    assert fold_unsymbolized(["main", "walk", "walk", "walk"]) == ["main", "walk", "walk", "walk"]
    assert fold_unsymbolized(["[]", "[]", "f[a]", "f[a]", "[a[b]]", "[a[b]]"]) == [
        "[]", "[]", "f[a]", "f[a]", "[a[b]]", "[a[b]]",
    ]  # fmt: skip


def test_a_deep_unknown_stack_is_drawn_shallow_and_merges_with_its_siblings() -> None:
    """The squid case: stacks that differ only in how many [unknown] frames perf walked
    through are one path in the graph, and the graph is as tall as its named frames."""
    stacks = {
        "on-CPU;squid" + ";[unknown]" * 120 + ";regexec": 2.0,
        "on-CPU;squid" + ";[unknown]" * 37 + ";regexec": 1.0,
        "on-CPU;squid;main": 0.5,
    }
    for document in (
        render_flamegraph(stacks, title="t", subtitle="s", unit="seconds"),
        render_flamegraph_diff(
            stacks, stacks, title="t", subtitle="s", unit="seconds", names=("a", "b")
        ),
    ):
        data = _data(document)
        assert data["depth"] == 5  # all; on-CPU; squid; [unknown]; regexec
        drawn = _tree(data, diff=data["diff"] is not None)
        unknown = drawn["all;on-CPU;squid;[unknown];regexec"]
        assert unknown == 3.0 or unknown == (3.0, 3.0)
        assert int(_parse(document).attrib["height"]) < 300
    # The stored stacks are not changed: only the drawing folds.
    assert ";[unknown]" * 120 in next(iter(stacks))


def _profile(what: str, stacks: dict[str, int]) -> records.Profile:
    return records.Profile(what, records.NANOSECONDS, stacks, events=1)


def test_widths_are_per_profiled_run_for_each_kind() -> None:
    profiles = [
        ("a", _profile(records.ON_CPU, {"p;f": 1_000_000_000})),
        ("a", _profile(records.ON_CPU, {"p;f": 3_000_000_000, "p;g": 2_000_000_000})),
        ("a", _profile(records.OFF_CPU, {"p;sleep": 500_000_000})),
        ("b", _profile(records.ON_CPU, {"p;h": 7})),
    ]
    stacks, unit, runs = variant_stacks(profiles, "a")
    assert unit == "seconds"
    assert stacks == {"on-CPU;p;f": 2.0, "on-CPU;p;g": 1.0, "off-CPU;p;sleep": 0.5}
    assert runs == {"on-CPU": 2, "off-CPU": 1}


@pytest.mark.parametrize("name", NASTY)
def test_no_string_from_a_profile_becomes_markup(name: str) -> None:
    """Each hostile string as a frame, a process name, a variant name and a title: the SVG is
    well-formed XML with only the flame graph's own elements, and the script's data holds the
    string as shown (control characters as escapes)."""
    frame = name.replace(";", ":")
    stacks = {f"on-CPU;{frame};main;{frame}": 1.0, "on-CPU;x;y": 2.0}
    documents = [
        render_flamegraph(stacks, title=name, subtitle=name, unit="seconds"),
        render_flamegraph_diff(
            stacks, {"on-CPU;x;y": 1.0}, title=name, subtitle=name, unit=name, names=(name, name)
        ),
    ]
    for document in documents:
        data = _data(document)
        names = data["names"]
        assert isinstance(names, list) and visible(frame) in names
        assert "<img" not in document and "</script><" not in document
        root = _parse(document)
        title = root.find(f"{SVG}text")
        assert title is not None and title.text is not None
        expected = "".join(c if c.isprintable() or c == " " else "\ufffd" for c in visible(name))
        assert title.text.replace("\ufffd", "") == expected.replace("\ufffd", "")


def test_the_script_can_sit_in_cdata() -> None:
    assert "]]>" not in _SCRIPT


def _store(path: Path, variants: tuple[str, str]) -> None:
    spec = Spec(
        name=HOSTILE[1],
        variants=tuple(Variant(v, ("true",)) for v in variants),
        baseline=variants[0],
    )
    with Store(path) as store:
        experiment = store.create_experiment(spec, {}, None, "t")
        for index, variant in enumerate(variants):
            for round_index in (0, 1):
                # As folding leaves them: no separator, no line break.
                frames = ";".join(" ".join(h.replace(";", ":").splitlines()) for h in HOSTILE)
                stacks = {f"{variant};main;{frames}": 1000 * (index + 1), "p;only": 5 + index}
                data = records.encode(_profile(records.ON_CPU, stacks))
                run = Run(variant, round_index, 0, RunStatus.OK, 0, None, {"wall": 1.0}, 0.0, "")
                store.add_run(experiment, run)
                profiled = Run(
                    variant, round_index, 0, RunStatus.OK, 0, None, {"wall": 1.0}, 0.0, "",
                    purpose="profile",
                )  # fmt: skip
                store.add_run(experiment, profiled, [RunData("profile", "on-cpu", 1, data)])


def test_the_cli_exports_both_graphs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    database = tmp_path / "c.db"
    variants = ("old</script><img src=x onerror=alert(1)>", 'new]]>"&')
    _store(database, variants)
    one, two = tmp_path / "one.svg", tmp_path / "diff.svg"
    db = ["--db", str(database)]
    assert entry.main(["export", "1", "--format", "flamegraph", "-o", str(one), *db]) == 0
    arguments = ["export", "1", "--format", "flamegraph-diff", "--variant", variants[1]]
    assert entry.main([*arguments, "-o", str(two), *db]) == 0
    assert variants[0] in str(_tree(_data(one.read_text())))  # the baseline by default
    changes = _tree(_data(two.read_text()), diff=True)
    # Each variant's process is named after it: the two are paired, not vanished and appeared.
    assert changes[f"all;on-CPU;{variants[0]} -> {variants[1]}"] == (1000e-9, 2000e-9)
    capsys.readouterr()
    assert entry.main(["export", "1", "--format", "flamegraph-diff", *db]) == 2
    assert "--variant" in capsys.readouterr().err
    assert entry.main(["export", "1", "--format", "flamegraph", "--variant", "x", *db]) == 2
    assert "no profile of variant 'x'" in capsys.readouterr().err
    assert entry.main(["export", "1", "--format", "json", "--variant", "x", *db]) == 2


def test_the_differential_graph_pairs_a_renamed_program() -> None:
    # The README's own example: ./server-v1 against ./server-v2. perf roots every stack at the
    # process name, so unpaired, all of one is "vanished" and all of the other "appeared".
    baseline = {"on-CPU;server-v1;main;parse": 2.0, "on-CPU;sh;main": 0.5}
    variant = {"on-CPU;server-v2;main;parse": 1.0, "on-CPU;server-v2;main;new": 1.0}
    variant["on-CPU;sh;main"] = 0.5
    data = _data(
        render_flamegraph_diff(
            baseline, variant, title="t", subtitle="s", unit="seconds", names=("v1", "v2")
        )
    )
    tree = _tree(data, diff=True)
    assert tree["all;on-CPU;server-v1 -> server-v2;main;parse"] == (2.0, 1.0)
    assert tree["all;on-CPU;server-v1 -> server-v2;main;new"] == (0.0, 1.0)
    assert tree["all;on-CPU;sh"] == (0.5, 0.5)  # found on both sides: left as it is
    assert "all;on-CPU;server-v1" not in tree and "all;on-CPU;server-v2" not in tree


def test_a_small_process_of_one_side_only_is_not_paired() -> None:
    baseline = {"on-CPU;prog;main": 10.0, "on-CPU;kworker/0:1;worker": 0.1}
    variant = {"on-CPU;prog;main": 10.0, "on-CPU;kworker/1:2;worker": 0.1}
    tree = _tree(
        _data(
            render_flamegraph_diff(
                baseline, variant, title="t", subtitle="s", unit="seconds", names=("a", "b")
            )
        ),
        diff=True,
    )
    assert tree["all;on-CPU;kworker/0:1"] == (0.1, 0.0)
    assert tree["all;on-CPU;kworker/1:2"] == (0.0, 0.1)
