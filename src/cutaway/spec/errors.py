"""The one error type of the spec package, and how it names keys and values in messages:
defined in cutaway.settings_reading, below the probes, whose packages read their own keys."""

from __future__ import annotations

from cutaway.settings_reading import KeyPath as KeyPath
from cutaway.settings_reading import SpecError as SpecError
from cutaway.settings_reading import describe as describe
from cutaway.settings_reading import expected as expected
from cutaway.settings_reading import format_key as format_key
