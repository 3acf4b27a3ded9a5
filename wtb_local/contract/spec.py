"""How one `run` option is declared: its help, its command-line form, its `WTB_*` twin, whether it enters the
run's hashed configuration, and which engine setting it becomes. `run/setup/options.py` declares every
option with one `Cli` (docs/architecture.md, "1. Options"); the command line, the environment twins, the
config hash, the engine settings (`engine_settings`) and the options table of docs/options.md are all read
from those declarations."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel


@dataclass(frozen=True)
class Cli:
    """How a field appears on the command line, in the run's hash and in the engine's settings.

    `hashed`: "yes" — the resolved values in `hash_keys` (default: the field's own name) are part of the
    hashed configuration that must match to resume a run directory; "when set" — the same, left out while
    unset (added after run directories had been written, so those still resume); "no" — operational
    (where, how fast, how shown).

    `engine`: the engine settings the resolved value becomes, by field name of the engine configs
    (engines/config.py): each config takes the first of these names it has; an unset value (None) is left
    out, so the config's own default applies."""

    help: str
    hashed: Literal["yes", "when set", "no"] = "no"
    hash_keys: tuple[str, ...] = ()
    # resolved values this option decides that are hashed only when set (added after run directories
    # had been written), whatever `hashed` says of the others
    hash_keys_when_set: tuple[str, ...] = ()
    type: Any = None
    decl: str | None = None  # e.g. "--thinking/--no-thinking"; default: --field-name
    is_flag: bool = False
    multiple: bool = False
    show_default: bool = False
    callback: Callable[..., Any] | None = None
    engine: tuple[str, ...] = ()

    def flag(self, name: str) -> str:
        return (self.decl or "--" + name.replace("_", "-")).split("/")[0]


def env_name(name: str) -> str:
    return "WTB_" + name.upper()


def engine_settings(declared: Mapping[str, tuple[str, ...]], values: Mapping[str, Any],
                    config: type[BaseModel]) -> dict[str, Any]:
    """The keyword arguments of the engine config `config` that the declared options decide: for each
    option with `engine` names, its value under the first name `config` has (unset values left out)."""
    settings: dict[str, Any] = {}
    for option, names in declared.items():
        target = next((name for name in names if name in config.model_fields), None)
        if target is not None and values.get(option) is not None:
            settings[target] = values[option]
    return settings
