"""The registered parsers: every module of this package holding a `ToolParser` subclass with a `name`
registers itself (nothing to list by hand). A module of its own so that `deviations.py`, which the
package's `__init__` calls to record format deviations, reads the registry without importing that
`__init__` back (docs/architecture.md, "Layout": no import cycle).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from functools import cache

from wtb_local.formats.parsers.base import ToolParser

_PACKAGE = __name__.rpartition(".")[0]
_NOT_PARSERS = ("base", "registry")


@cache
def parser_classes() -> dict[str, type[ToolParser]]:
    """name -> parser class, sorted by name; a name defined twice is an error."""
    found: dict[str, type[ToolParser]] = {}
    modules = pkgutil.iter_modules([os.path.dirname(__file__)])
    for info in sorted(modules, key=lambda m: m.name):
        if info.name.startswith("_") or info.name in _NOT_PARSERS:
            continue
        module = importlib.import_module(f"{_PACKAGE}.{info.name}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, ToolParser)
                and obj.__module__ == module.__name__
                and isinstance(obj.__dict__.get("name"), str)
                and not getattr(obj, "__abstractmethods__", None)
            ):
                if obj.name in found and found[obj.name] is not obj:
                    raise RuntimeError(
                        f"parser name {obj.name!r} defined twice ({found[obj.name].__module__}, "
                        f"{obj.__module__})"
                    )
                found[obj.name] = obj
    return dict(sorted(found.items()))
