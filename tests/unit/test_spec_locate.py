"""find_line: where a key is in TOML text, since tomllib gives no positions."""

from __future__ import annotations

import tomllib

from cutaway.spec import find_line

TEXT = '''\
# an experiment
name = "x"   # the name
"quoted key" = 1
'literal key' = 2
site."dotted.part".leaf = 3
notes = """
rounds = 99
[[variants]]
"""
literal = \'\'\'
seed = 1 \'\'\'
array = [
  "a",   # [[variants]] in a comment
  "b",
]

[matrix]
senders = [1, 10]

[[variants]]
name = "a"
env = { A = "1", B = "2" }

[[variants]]
name = "b"

[variants.env]
C = "3"

[[variants]]
name = "c"
command = [
  "x",
]
'''


def test_the_fixture_is_valid_toml() -> None:
    assert len(tomllib.loads(TEXT)["variants"]) == 3


def test_plain_quoted_and_literal_keys() -> None:
    assert find_line(TEXT, ("name",)) == 2
    assert find_line(TEXT, ("quoted key",)) == 3
    assert find_line(TEXT, ("literal key",)) == 4


def test_dotted_keys_and_their_parents() -> None:
    assert find_line(TEXT, ("site", "dotted.part", "leaf")) == 5
    assert find_line(TEXT, ("site",)) == 5


def test_multiline_strings_do_not_produce_keys() -> None:
    assert find_line(TEXT, ("notes",)) == 6
    assert find_line(TEXT, ("rounds",)) is None
    assert find_line(TEXT, ("literal",)) == 10
    assert find_line(TEXT, ("seed",)) is None


def test_multiline_arrays_and_comments_inside_them() -> None:
    assert find_line(TEXT, ("array",)) == 12
    assert find_line(TEXT, ("array", 1)) == 12  # an element falls back to its key
    assert find_line(TEXT, ("variants", 0)) == 20  # not the comment on line 13


def test_tables_and_their_keys() -> None:
    assert find_line(TEXT, ("matrix",)) == 17
    assert find_line(TEXT, ("matrix", "senders")) == 18
    assert find_line(TEXT, ("matrix", "missing")) == 17


def test_array_of_tables_entries_are_numbered() -> None:
    assert find_line(TEXT, ("variants", 0, "name")) == 21
    assert find_line(TEXT, ("variants", 1, "name")) == 25
    assert find_line(TEXT, ("variants", 2, "name")) == 31
    assert find_line(TEXT, ("variants", 2, "command", 0)) == 32


def test_missing_key_falls_back_to_its_table_header() -> None:
    assert find_line(TEXT, ("variants", 1, "command")) == 24
    assert find_line(TEXT, ("variants", 7, "command")) == 20  # unknown entry: first header


def test_inline_table_keys_are_on_the_line_of_the_table() -> None:
    assert find_line(TEXT, ("variants", 0, "env")) == 22
    assert find_line(TEXT, ("variants", 0, "env", "B")) == 22


def test_subtable_of_an_array_entry_belongs_to_the_latest_entry() -> None:
    assert find_line(TEXT, ("variants", 1, "env")) == 27
    assert find_line(TEXT, ("variants", 1, "env", "C")) == 28


def test_unknown_top_level_key_is_none() -> None:
    assert find_line(TEXT, ("nothing",)) is None
    assert find_line("", ("name",)) is None


def test_multiline_basic_string_with_escaped_quotes_and_trailing_quotes() -> None:
    text = 'a = """x \\""" y\nname = 1\n"""""\nb = 2\n'
    assert tomllib.loads(text)["b"] == 2
    assert find_line(text, ("name",)) is None
    assert find_line(text, ("b",)) == 4
