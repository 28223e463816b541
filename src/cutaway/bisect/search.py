"""The bisection itself, without git or measurement: which commit to test next and what the
tests so far say. Commits are indices into the list GOOD, c1, ..., BAD (0 is known good, the
last is known bad). A commit that cannot be built is skipped, as `git bisect skip` does: the
next test is the untested commit nearest the middle. When only skipped commits stand between
the last good and the first bad one, the first bad commit is one of them or that bad one, and
the search says so rather than guessing."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Search:
    """What is known about ``size`` commits (index 0 good, ``size - 1`` bad)."""

    size: int
    good: int = 0
    bad: int = -1
    skipped: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.size < 2:
            raise ValueError("a bisection needs a good and a bad commit")
        if self.bad < 0:
            self.bad = self.size - 1

    def next(self) -> int | None:
        """The commit to test next: the untested one nearest the middle of what is left (the
        lower of two equally near); None when nothing is left to test."""
        left = [index for index in range(self.good + 1, self.bad) if index not in self.skipped]
        if not left:
            return None
        middle = (self.good + self.bad) / 2
        return min(left, key=lambda index: (abs(index - middle), index))

    def mark_good(self, index: int) -> None:
        self._check(index)
        self.good = index

    def mark_bad(self, index: int) -> None:
        self._check(index)
        self.bad = index

    def skip(self, index: int) -> None:
        self._check(index)
        self.skipped.add(index)

    def candidates(self) -> list[int]:
        """The commits that may be the first bad one: the bad one, and any skipped commit
        between it and the last good one."""
        return [i for i in range(self.good + 1, self.bad) if i in self.skipped] + [self.bad]

    def steps_left(self) -> int:
        """At most how many more tests, if none is skipped: ceil(log2(untested + 1))."""
        return max(0, (self.bad - self.good - 1).bit_length())

    def _check(self, index: int) -> None:
        if not self.good < index < self.bad:
            raise ValueError(f"commit {index} is outside the range still searched")
