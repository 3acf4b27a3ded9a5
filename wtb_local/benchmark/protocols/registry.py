"""The protocols by name (the first is the default)."""

from __future__ import annotations

from wtb_local.benchmark.protocols.base import Protocol

_PROTOCOLS = ("release", "paper")  # the first is the default


def protocol_names() -> tuple[str, ...]:
    return _PROTOCOLS


def protocol_named(name: str | None) -> Protocol:
    """The protocol object; None (a manifest or config without the key) is the default, `release`."""
    from wtb_local.benchmark.protocols.paper import PaperProtocol  # deferred: start-up
    from wtb_local.benchmark.protocols.release import ReleaseProtocol  # deferred: start-up

    for protocol in (ReleaseProtocol(), PaperProtocol()):
        if protocol.name == (name or _PROTOCOLS[0]):
            return protocol
    raise ValueError(f"unknown protocol {name!r}; choose one of {', '.join(_PROTOCOLS)}")


def find_protocol(name: str | None) -> Protocol | None:
    """The protocol of that name, None for a name no protocol has (a lenient metric file without a run)."""
    try:
        return protocol_named(name)
    except ValueError:
        return None


def default_scoring() -> tuple[str, str]:
    """(protocol, checker) of a run made without --protocol: rows with it keep a plain label."""
    protocol = protocol_named(None)
    return protocol.name, protocol.checker
