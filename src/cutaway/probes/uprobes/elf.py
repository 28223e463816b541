"""The function symbols of an ELF file, read from its section headers: what a uprobe can be put
on by name. Pure reading of the file, no tool needed (binutils' nm may be absent).

A stripped binary has lost ``.symtab`` (every function) but keeps ``.dynsym``, the symbols it
exports, which is often enough for a server's main entry points (Debian's slapd exports
``do_search`` and ``test_filter``). Format: the System V ABI, chapter 4
(https://refspecs.linuxfoundation.org/elf/gabi4+/ch4.sheader.html)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

_MAGIC = b"\x7fELF"
_SHT_SYMTAB = 2
_SHT_DYNSYM = 11
_STT_FUNC = 2
_STT_GNU_IFUNC = 10
_SHN_UNDEF = 0


class NotElf(Exception):
    """The file is not an ELF file (or is damaged): says which and why."""


@dataclass(frozen=True)
class Symbols:
    """The defined function symbols of one ELF file: all of them (``.symtab`` and ``.dynsym``),
    and whether ``.symtab`` was there (False: the file is stripped, only exports are left)."""

    functions: frozenset[str]
    has_symtab: bool


def function_symbols(path: str | Path) -> Symbols:
    """The defined function symbols of the ELF file at ``path``. Raises NotElf for anything
    else, OSError when it cannot be read."""
    data = Path(path).read_bytes()
    if data[:4] != _MAGIC or len(data) < 64:
        raise NotElf(f"{path} is not an ELF binary")
    wide = data[4] == 2  # ELFCLASS64
    order = "<" if data[5] == 1 else ">"
    try:
        if wide:
            (shoff,) = struct.unpack_from(order + "Q", data, 0x28)
            shentsize, shnum = struct.unpack_from(order + "HH", data, 0x3A)
        else:
            (shoff,) = struct.unpack_from(order + "I", data, 0x20)
            shentsize, shnum = struct.unpack_from(order + "HH", data, 0x2E)
        sections = [_section(data, order, wide, shoff + i * shentsize) for i in range(shnum)]
        functions: set[str] = set()
        has_symtab = False
        for kind, offset, size, link, entsize in sections:
            if kind not in (_SHT_SYMTAB, _SHT_DYNSYM) or entsize == 0:
                continue
            has_symtab |= kind == _SHT_SYMTAB
            _, strings_offset, strings_size, _, _ = sections[link]
            strings = data[strings_offset : strings_offset + strings_size]
            for start in range(offset, offset + size - entsize + 1, entsize):
                name = _function_name(data, order, wide, start, strings)
                if name:
                    functions.add(name)
    except (struct.error, IndexError) as error:
        raise NotElf(f"{path}: damaged ELF file ({error})") from None
    return Symbols(frozenset(functions), has_symtab)


def _section(data: bytes, order: str, wide: bool, at: int) -> tuple[int, int, int, int, int]:
    """(type, offset, size, link, entry size) of the section header at ``at``."""
    if wide:
        _, kind, _, _, offset, size, link, _, _, entsize = struct.unpack_from(
            order + "IIQQQQIIQQ", data, at
        )
    else:
        _, kind, _, _, offset, size, link, _, _, entsize = struct.unpack_from(
            order + "IIIIIIIIII", data, at
        )
    return kind, offset, size, link, entsize


def _function_name(data: bytes, order: str, wide: bool, at: int, strings: bytes) -> str | None:
    if wide:
        name_offset, info, _, shndx, value = struct.unpack_from(order + "IBBHQ", data, at)
    else:
        name_offset, value, _, info, _, shndx = struct.unpack_from(order + "IIIBBH", data, at)
    if info & 0xF not in (_STT_FUNC, _STT_GNU_IFUNC) or shndx == _SHN_UNDEF or value == 0:
        return None
    end = strings.find(b"\0", name_offset)
    name = strings[name_offset : end if end >= 0 else len(strings)]
    return name.decode("utf-8", "replace") or None
