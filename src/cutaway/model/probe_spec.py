"""What the experiment file asks of the probes: :class:`ProbeSpec`.

Immutable, no I/O, imports nothing of cutaway outside ``cutaway.model``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from cutaway.value_class import value_class


def unset(value: object) -> bool:
    """A stored value that leaves a probe off: none, false or empty (``"calls": []``, as
    specs stored before a probe's settings moved to its package have for every probe off)."""
    return value is None or value is False or (isinstance(value, list | tuple | dict) and not value)


@value_class
class ProbeSpec:
    """Which probes watch the measured runs, and how: each probe's settings, which the model
    knows nothing of."""

    # The settings of every probe (calls, instructions, profile, spans, uprobes ...), whose
    # type lives in its own package: (a key of the [probes] table, its settings in their stored
    # form, a JSON value), in the keys' order. Its package writes them (its plugin's
    # read_settings) and reads them back (e.g. cutaway.probes.spans.settings.spans_settings);
    # the store keeps them as they are.
    settings: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        # Sorted, and unset values left out: equal settings are equal however they were made
        # (read from a file, from an older store, or from this one).
        settings = sorted((kv for kv in self.settings if not unset(kv[1])), key=lambda kv: kv[0])
        object.__setattr__(self, "settings", tuple(settings))

    def setting(self, key: str) -> object | None:
        """The stored form of the settings under ``key`` of [probes], None when not set."""
        return next((value for name, value in self.settings if name == key), None)

    def with_setting(self, key: str, value: object) -> ProbeSpec:
        """The same probes with the settings under ``key`` set to ``value`` (a JSON value;
        None, false or empty: unset, the probe off)."""
        others = tuple((name, old) for name, old in self.settings if name != key)
        return replace(self, settings=(*others, (key, value)))

    def to_dict(self) -> dict[str, object]:
        return dict(self.settings)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ProbeSpec:
        return cls(settings=tuple(data.items()))
