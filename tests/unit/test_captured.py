"""What is kept of a command's output: its head, its tail and the count of all."""

from __future__ import annotations

from cutaway.runner.captured import Captured


def test_the_head_and_the_tail_keep_their_bytes_across_pieces() -> None:
    captured = Captured(head_bytes=5, tail_bytes=4)
    for piece in (b"abc", b"defgh", b"", b"ij"):
        captured.add(piece)
    assert (bytes(captured.head), bytes(captured.tail)) == (b"abcde", b"ghij")
    assert captured.total_bytes == 10 and captured.truncated
    captured.add(b"0123456789")
    assert (bytes(captured.head), bytes(captured.tail)) == (b"abcde", b"6789")


def test_output_within_the_head_is_whole() -> None:
    captured = Captured(head_bytes=8)
    captured.add(b"42\n")
    assert not captured.truncated and captured.head_text() == "42\n" and not captured.tail


def test_a_tail_cut_inside_a_character_does_not_start_with_its_pieces() -> None:
    captured = Captured(tail_bytes=4)
    captured.add("aé€".encode())  # a, then 2 bytes, then 3: the tail cuts é in two
    assert captured.tail_text() == "€"
    whole = Captured(tail_bytes=5)
    whole.add(b"\x80ok")  # not cut: an undecodable first byte is shown as such
    assert whole.tail_text() == "\ufffdok"
