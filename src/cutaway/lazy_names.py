"""A package's public names imported with their submodule when first asked for (PEP 562): one
``__getattr__``/``__dir__`` pair for every package that defers its submodules (cutaway.model,
cutaway.spec), so that a command pays only for the modules it uses."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from importlib import import_module


def lazy_names(
    package: str,
    submodule_of: Mapping[str, str],
    namespace: MutableMapping[str, object],
    public: Sequence[str],
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: a name of ``submodule_of`` comes
    from its submodule, imported then, and is kept in ``namespace`` (the package's globals), so
    the next lookup finds it without ``__getattr__``."""

    def getattr_(name: str) -> object:
        submodule = submodule_of.get(name)
        if submodule is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{submodule}"), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *public})

    return getattr_, dir_
