"""An experiment's analysis, kept between commands: `cutaway report` of an experiment that
`cutaway run` (or an earlier report or export) analysed shows the kept analysis, without importing
numpy or drawing the bootstrap's resamples again; each is most of a small report's time.

The rule (docs/how-it-works.md says the same for users): an analysis is kept in a file of
cutaway's cache directory (:func:`directory`) named by a digest of everything it is a function
of, and read back only under that same digest:

- every stored row of the experiment (Store.experiment_content): the experiment, its variants,
  runs, measurements, run data, probes and calibration, as stored;
- cutaway's code: its version and each of its source files' path, size and modification time;
  numpy's (its version file), whose generator draws the resamples; the Python version;
- what was asked: every pair of variants, or each against the baseline.

A change to any of them is another digest: a kept analysis is never updated, and one that no
longer matches is never read again (the oldest files go beyond KEPT_FILES). Only a finished
experiment (complete or incomplete) without probes is kept: a probe's analysis is its plugin's,
and may read what the store does not hold. Nothing about a kept analysis is trusted but its
digest: a file that cannot be read or decoded is ignored (the experiment is analysed again and
the file rewritten), one that cannot be written is left out, and decoding builds only the
value objects of cutaway.model (never anything a file names beyond them).

The file holds the Analysis as JSON, each value tagged with its type (:func:`encoded`), so that
the decoded Analysis is the one the analysis made: the same types, the same floats to the bit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import io
import json
import os
import stat
import sys
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import TYPE_CHECKING, TextIO

from cutaway import __version__

try:
    # The C module alone: hashlib loads OpenSSL first (2 to 10 ms), for a hash it has built in.
    from _blake2 import blake2b
except ImportError:  # an interpreter without it
    from hashlib import blake2b

if TYPE_CHECKING:
    from cutaway.model import Analysis, Spec
    from cutaway.store import Store

FORMAT = 1  # of the kept files; a new one makes every older file another digest's
CACHE_DIR_VARIABLE = "CUTAWAY_CACHE_DIR"  # as for the calibration (runner/calibration.py)
DIRECTORY_NAME = "analyses"
KEPT_FILES = 64  # the newest are kept, the oldest removed when a new one is written
KEPT_STATUSES = ("complete", "incomplete")
# An experiment with more run data than this (a probe's records) is neither digested nor kept.
LARGEST_RUN_DATA_BYTES = 4 * 1024 * 1024
# A kept file larger than this is not read (an analysis of at most LARGEST_RUN_DATA_BYTES of
# run data is a few MiB): a file planted there must not be read whole into memory.
LARGEST_KEPT_BYTES = 64 * 1024 * 1024
# The only module whose classes a kept analysis may hold, and a decoded one may build.
_MODEL = "cutaway.model"


class Unkept(ValueError):
    """A value an analysis holds that a kept file cannot (nothing is kept then)."""


def analysis_of(
    store: Store,
    experiment_id: int,
    *,
    all_pairs: bool = False,
    estimator: str | None = None,
    confidence: float | None = None,
) -> Analysis:
    """The analysis of a stored experiment (cutaway.compare.analyze): the kept one when its
    digest matches, else analysed now and kept if it may be (see the module's rule).
    ``estimator`` and ``confidence`` read the rounds with another estimator or confidence
    level than the experiment's."""
    reading = (estimator, confidence)
    # Before the digest's read: a commit after that read changes the count.
    commits = store.commits_by_others()
    key = _key(store, experiment_id, all_pairs, reading)
    if key is not None:
        found = read_kept(key)
        if found is not None:
            return found
    from cutaway.compare import analyze

    analysis = analyze(
        store, experiment_id, all_pairs=all_pairs, estimator=estimator, confidence=confidence
    )
    if (
        key is not None
        # nothing changed while it was analysed (another process resuming it): no other
        # connection committed since the digest's read, else the content digests the same
        and (
            (commits is not None and store.commits_by_others() == commits)
            or _key(store, experiment_id, all_pairs, reading) == key
        )
        and _may_keep(store.experiment(experiment_id).spec, analysis)
    ):
        keep(key, analysis)
    return analysis


def directory() -> str:
    """$CUTAWAY_CACHE_DIR/analyses, else under $XDG_CACHE_HOME/cutaway, else under
    ~/.cache/cutaway: beside the calibration's file."""
    base = os.environ.get(CACHE_DIR_VARIABLE)
    if not base:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(cache, "cutaway")
    return os.path.join(base, DIRECTORY_NAME)


def _key(
    store: Store, experiment_id: int, all_pairs: bool, reading: tuple[str | None, float | None]
) -> str | None:
    """The digest an analysis of the experiment is kept under (``reading``: the estimator and
    confidence level asked for, None for the experiment's); None for an experiment that is not
    kept (running, or with too much run data to digest)."""
    content = store.experiment_content(experiment_id, LARGEST_RUN_DATA_BYTES)
    if content is None:
        return None
    (experiment_row,) = content[0][1]
    if experiment_row[2] not in KEPT_STATUSES:  # experiments.status, its third column
        return None
    digest = blake2b(digest_size=20)
    digest.update(repr((FORMAT, all_pairs, reading, _code_key())).encode())
    for table, rows in content:
        if table == "run_data":  # PostgreSQL reads a blob as a memoryview: bytes, as SQLite
            rows = [tuple(_as_bytes(value) for value in row) for row in rows]
        digest.update(_serialized((table, rows)))
    return digest.hexdigest()


def _serialized(value: object) -> bytes:
    """``value`` (a table's rows) as bytes that only an equal value of the same types gives:
    pickled without a memo, so by the values alone and not by which of them are one object
    (a float as its 8 bytes, a string as its UTF-8), ten times faster than their repr, which
    was most of the digest's time; the repr of anything pickle refuses."""
    try:
        from _pickle import Pickler, PicklingError  # the C module: pickle's Python adds ~1 ms
    except ImportError:  # an interpreter without it
        from pickle import Pickler, PicklingError

    written = io.BytesIO()
    pickler = Pickler(written, protocol=5)
    pickler.fast = True  # no memo: each value written whole, wherever it occurs
    try:
        pickler.dump(value)
    except (PicklingError, TypeError, ValueError, AttributeError):
        return b"repr" + repr(value).encode("utf-8", "backslashreplace")
    return written.getvalue()


def _as_bytes(value: object) -> object:
    return bytes(value) if isinstance(value, memoryview) else value


def _code_key() -> tuple[object, ...]:
    """What of the code an analysis depends on: cutaway's version and source files (a checkout
    that changed keeps its version), numpy's version file, the Python version."""
    numpy_version: tuple[object, ...] = ()
    for entry in sys.path:
        candidate = os.path.join(entry or ".", "numpy", "version.py")
        try:
            found = os.stat(candidate)
        except OSError:
            continue
        numpy_version = (candidate, found.st_size, found.st_mtime_ns)
        break
    return (__version__, sys.version, numpy_version, _package_files())


@lru_cache(maxsize=1)
def _package_files() -> tuple[tuple[str, int, int], ...]:
    """cutaway's own source files, read once per process (a miss digests twice: before and
    after the analysis)."""
    import cutaway

    package = os.path.dirname(cutaway.__file__)
    return tuple(sorted(_source_files(package, package)))


def _source_files(root: str, folder: str) -> list[tuple[str, int, int]]:
    """(path under root, size, modification time) of each Python file and extension below
    ``folder``, bytecode caches left out."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    found += _source_files(root, entry.path)
            elif entry.name.endswith((".py", ".so")):
                status = entry.stat()
                found.append((entry.path[len(root) :], status.st_size, status.st_mtime_ns))
    return found


def _may_keep(spec: Spec, analysis: Analysis) -> bool:
    """Whether the analysis may be kept: no probe measured or analysed anything in it."""
    from cutaway.probes.core import plugins

    if analysis.probes or analysis.probe_results:
        return False
    return not any(plugin.selected(spec) for plugin in plugins())


def read_kept(key: str) -> Analysis | None:
    """The analysis kept under ``key``, None when there is none (or none that decodes)."""
    from cutaway.model import Analysis

    try:
        with _opened_file(os.path.join(directory(), f"{key}.json")) as file:
            kept = json.load(file)
        if kept.get("format") != FORMAT or kept.get("key") != key:
            return None
        analysis = decoded(kept["analysis"])
    except (
        OSError, ValueError, TypeError, KeyError, IndexError, AttributeError, ImportError,
        RecursionError,
    ):  # fmt: skip
        return None  # unreadable or damaged: analysed again, and rewritten
    return analysis if isinstance(analysis, Analysis) else None


def _opened_file(path: str) -> TextIO:
    """``path`` opened to read, if it is a regular file of at most LARGEST_KEPT_BYTES: opening
    a FIFO there would wait for a writer for ever, and a device (a link to /dev/zero) or a huge
    file would be read until memory ran out. OSError for anything else."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise OSError(f"{path}: not a regular file")
        if status.st_size > LARGEST_KEPT_BYTES:
            raise OSError(f"{path}: larger than any kept analysis")
        return open(descriptor, encoding="utf-8")
    except BaseException:
        os.close(descriptor)
        raise


def keep(key: str, analysis: Analysis) -> None:
    """Write the analysis under ``key`` (whole or not at all), and remove the oldest files
    beyond KEPT_FILES; an analysis that cannot be kept, or a directory that cannot be
    written, is left alone."""
    try:
        text = json.dumps(
            {"format": FORMAT, "key": key, "analysis": encoded(analysis)},
            separators=(",", ":"),  # ASCII: a name's lone surrogate is escaped, read back whole
        )
    except Unkept:
        return
    folder = directory()
    path = os.path.join(folder, f"{key}.json")
    partial = f"{path}.{os.getpid()}.partial"
    try:
        os.makedirs(folder, exist_ok=True)
        with open(partial, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(partial, path)
        _remove_oldest(folder)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(partial)


def _remove_oldest(folder: str) -> None:
    with os.scandir(folder) as entries:
        kept = [
            (entry.stat(follow_symlinks=False).st_mtime_ns, entry.path)
            for entry in entries
            if _is_kept_name(entry.name)
        ]
    kept.sort()
    for _, path in kept[: max(0, len(kept) - KEPT_FILES)]:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _is_kept_name(name: str) -> bool:
    """Whether ``name`` is one :func:`keep` writes (a digest's file, or one being written):
    the directory may hold anything else (a $CUTAWAY_CACHE_DIR that is a home directory),
    which is not cutaway's to remove."""
    digest, dot, rest = name.partition(".")
    if len(digest) != 40 or not all(character in "0123456789abcdef" for character in digest):
        return False
    return dot + rest == ".json" or (rest.startswith("json.") and rest.endswith(".partial"))


# --- the tagged JSON of an Analysis ----------------------------------------------------------

# Each container is a JSON array whose first item names its type; a scalar is itself.
_TUPLE, _LIST, _DICT, _MAPPING, _ENUM, _OBJECT = "t", "l", "d", "m", "e", "o"
_SCALARS = (str, int, bool, type(None))


# Values that are their own JSON, by exact type (a subclass, an enum's member or numpy's
# float64 among them, goes through encoded()): checked inline before a call, since most of an
# analysis's values are these (each run's fields and metrics).
_PLAIN = frozenset({str, int, bool, type(None), float})


def encoded(value: object) -> object:
    """``value`` as JSON values, each container tagged with its type: a tuple, list, dict or
    read-only mapping, an enum member or a dataclass of cutaway.model (its fields in order).
    A float stays a float (JSON writes its shortest exact form; NaN and the infinities as
    JSON's extensions). Unkept for anything else."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if isinstance(value, enum.Enum):  # before str: a StrEnum's members are strings
        return [_ENUM, _class_name(kind), encoded(value.value)]
    if isinstance(value, float):  # numpy's float64 too: the same number, as a float
        return float(value)
    if kind is tuple:
        return [_TUPLE, *_encoded_items(value)]  # type: ignore[arg-type]
    if kind is list:
        return [_LIST, *_encoded_items(value)]  # type: ignore[arg-type]
    if kind is dict:
        return [_DICT, *_encoded_pairs(value)]  # type: ignore[arg-type]
    if kind is MappingProxyType:
        return [_MAPPING, *_encoded_pairs(value)]  # type: ignore[arg-type]
    names = _field_names(kind)
    return [_OBJECT, _class_name(kind), *_encoded_items([getattr(value, n) for n in names])]


def _encoded_items(items: Iterable[object]) -> list[object]:
    return [item if type(item) in _PLAIN else encoded(item) for item in items]


def _encoded_pairs(mapping: Mapping[object, object]) -> list[object]:
    return _encoded_items([part for item in mapping.items() for part in item])


_fields_of: dict[type, tuple[str, ...]] = {}


def _field_names(kind: type) -> tuple[str, ...]:
    """The fields of a dataclass, in order (Unkept for any other class): looked up once per
    class, not once per value."""
    found = _fields_of.get(kind)
    if found is None:
        if not dataclasses.is_dataclass(kind):
            raise Unkept(f"a {kind.__qualname__} cannot be kept")
        found = _fields_of[kind] = tuple(field.name for field in dataclasses.fields(kind))
    return found


def _class_name(kind: type) -> str:
    if kind.__module__ != _MODEL and not kind.__module__.startswith(f"{_MODEL}."):
        raise Unkept(f"{kind.__module__}.{kind.__qualname__} is not a value object of {_MODEL}")
    return f"{kind.__module__}:{kind.__qualname__}"


def decoded(value: object) -> object:
    """The value :func:`encoded` gave ``value`` from. ValueError for anything it does not
    give: a class outside cutaway.model, an unknown tag, fields that do not fit the class."""
    if not isinstance(value, list):
        if type(value) in _SCALARS or type(value) is float:
            return value
        raise ValueError(f"not a kept value: {type(value).__qualname__}")
    if not value or not isinstance(value[0], str):
        raise ValueError("a kept container without its tag")
    tag, items = value[0], value[1:]
    decode = _DECODERS.get(tag)
    if decode is None:
        raise ValueError(f"unknown tag {tag!r} in a kept analysis")
    return decode(items)


def _decoded_enum(items: list[object]) -> object:
    name, raw = items
    key = (name, type(raw), raw) if type(name) is str and type(raw) in _PLAIN else None
    member = _members.get(key)
    if member is None:
        kind = _model_class(name)
        if not issubclass(kind, enum.Enum):
            raise ValueError(f"{name} is not an enum")
        member = kind(decoded(raw))
        if key is not None:
            _members[key] = member
    return member


# Enum members decoded, by class name and value: every run holds its status.
_members: dict[object, enum.Enum] = {}


def _decoded_object(items: list[object]) -> object:
    name, *values = items
    kind = _model_class(name)
    if not dataclasses.is_dataclass(kind):
        raise ValueError(f"{name} is not a value object")
    names = _field_names(kind)
    if len(names) != len(values):
        raise ValueError(f"{name} has {len(names)} fields, the kept one {len(values)}")
    # Built as it was, field by field: a frozen dataclass's __init__ would run its
    # __post_init__ again on values it already made.
    made = object.__new__(kind)
    fields = zip(names, _decoded_items(values), strict=True)
    if hasattr(made, "__dict__"):  # each of the model's: its fields set at once
        made.__dict__.update(fields)
    else:
        for field_name, raw in fields:
            object.__setattr__(made, field_name, raw)
    return made


def _decoded_items(items: list[object]) -> list[object]:
    """Each item decoded: a scalar that JSON gives is itself (checked inline, as most are)."""
    return [item if type(item) in _PLAIN else decoded(item) for item in items]


def _pairs(items: list[object]) -> dict[object, object]:
    if len(items) % 2:
        raise ValueError("a kept mapping with a key and no value")
    parts = _decoded_items(items)
    return dict(zip(parts[0::2], parts[1::2], strict=True))


_classes: dict[str, type] = {}


def _model_class(name: object) -> type:
    """The class of cutaway.model that ``name`` ("module:qualified name") names."""
    if not isinstance(name, str):
        raise ValueError("a kept class name that is not a string")
    found = _classes.get(name)
    if found is not None:
        return found
    module_name, _, qualified = name.partition(":")
    if module_name != _MODEL and not module_name.startswith(f"{_MODEL}."):
        raise ValueError(f"{name} is not a value object of {_MODEL}")
    module = sys.modules.get(module_name)
    if module is None:
        from importlib import import_module

        module = import_module(module_name)
    value: object = module
    for part in qualified.split("."):
        value = getattr(value, part)
    if not isinstance(value, type) or value.__module__ != module_name:
        raise ValueError(f"{name} is not a class of {module_name}")
    _classes[name] = value
    return value


_DECODERS: dict[str, Callable[[list[object]], object]] = {
    _TUPLE: lambda items: tuple(_decoded_items(items)),
    _LIST: _decoded_items,
    _DICT: _pairs,
    _MAPPING: lambda items: MappingProxyType(_pairs(items)),
    _ENUM: _decoded_enum,
    _OBJECT: _decoded_object,
}
