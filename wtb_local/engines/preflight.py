"""Cheap checks before expensive ones, so a run that cannot work says why in seconds, in one line.

Order (each backend's `check`, called by run/setup/prepare.py): the backend's packages are importable, `--model` is given, an OpenAI
server answers, the Hugging Face hub answers when a hub id has to be read (with HF_HUB_OFFLINE=1: the model
is in the hub cache). The dataset is fetched and the tokenizer loaded only after these pass. Each
network check is one attempt with a short timeout: an unreachable host would otherwise cost a minute of
the hub library's retries before its own (multi-line) error.
"""

from __future__ import annotations

import importlib.util
import os
import urllib.error
import urllib.request
from pathlib import Path

from wtb_local.engines.errors import SetupError
from wtb_local.engines.server_url import API_KEY_HINT, ServerURL

# The packages each backend imports are declared by the backend (engines/base.py, Capabilities.packages),
# with the extra that brings them.
RENDER_PACKAGES: tuple[tuple[str, ...], str] = (("transformers",), "hf")
DEFAULT_NETWORK_TIMEOUT_S = 5.0
_TRUE = ("1", "true", "yes", "on")


def network_timeout() -> float:
    """`WTB_NETWORK_TIMEOUT` seconds (default 5) for the one-attempt hub and server checks."""
    try:
        return max(0.1, float(os.environ.get("WTB_NETWORK_TIMEOUT", DEFAULT_NETWORK_TIMEOUT_S)))
    except ValueError:
        return DEFAULT_NETWORK_TIMEOUT_S


def missing(packages: tuple[str, ...]) -> list[str]:
    """The packages that cannot be imported (found without importing them)."""
    absent = []
    for name in packages:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a parent package missing, or a module blocked in sys.modules
            found = False
        if not found:
            absent.append(name)
    return absent


def require_packages(what: str, spec: tuple[tuple[str, ...], str]) -> None:
    """`spec`: (the packages, the extra that brings them)."""
    from wtb_local.contract.install_command import install_command  # deferred: start-up

    packages, extra = spec
    absent = missing(packages)
    if absent:
        raise SetupError(f"{what} needs {' and '.join(absent)}, which {'is' if len(absent) == 1 else 'are'} "
                       f"not installed: {install_command(extra)}")


def offline_variable() -> str | None:
    """The variable that turns the hub off (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE), None when none does."""
    return next((var for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
                 if os.environ.get(var, "").strip().lower() in _TRUE), None)


def hub_offline() -> bool:
    return offline_variable() is not None


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def hub_cache() -> Path:
    """Where huggingface_hub keeps downloaded models (its own precedence of variables)."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return Path(home).expanduser() / "hub"


def looks_local(model: str) -> bool:
    """A path rather than a hub id (`org/name`): it exists, or it is absolute, relative with `.`/`~`, or
    has more than one `/` (a missing local directory is reported as such, not as a hub problem)."""
    return (Path(model).expanduser().exists() or model.startswith(("/", ".", "~"))
            or model.count("/") > 1 or os.sep != "/" and os.sep in model)


def needs_hub(model: str | None) -> bool:
    """A hub id (not a local directory) with the hub not turned off."""
    return bool(model) and not looks_local(str(model)) and not hub_offline()


def in_hub_cache(model: str, revision: str | None = None) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(model, "config.json", revision=revision), str)
    except Exception:  # noqa: BLE001 - no hub library or a malformed id: not cached
        return False


def probe(url: str, timeout: float, headers: dict[str, str] | None = None) -> tuple[int | None, str | None]:
    """One request: (HTTP status, None) when the host answered at all, (None, why) when it did not."""
    request = urllib.request.Request(url, headers={"User-Agent": "wtb_local", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, None
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except TimeoutError:
        return None, f"no answer within {timeout:g} s"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        if isinstance(reason, TimeoutError):
            return None, f"no answer within {timeout:g} s"
        return None, " ".join(str(reason).split())


def hub_problem(model: str, revision: str | None = None) -> str | None:
    """None when the hub answers; else the one line that says what to do."""
    endpoint = hub_endpoint()
    status, reason = probe(endpoint + "/api/models", network_timeout())
    if status is not None:
        return None
    cache = hub_cache()
    if in_hub_cache(model, revision):
        todo = f"{model} is in the cache {cache}: set HF_HUB_OFFLINE=1 to use it without the hub"
    else:
        todo = (f"{model} is not in the cache {cache}: download it where the hub is reachable, or pass a local "
                "model directory; HF_HUB_OFFLINE=1 uses only the cache")
    return f"the Hugging Face hub {endpoint} is unreachable ({reason}); {todo}"


def offline_problem(model: str, revision: str | None = None) -> str | None:
    """With the hub turned off: None when `model` is in the hub cache; else the one line that says so
    (transformers would otherwise spend seconds before its own multi-line "check your internet" error)."""
    if in_hub_cache(model, revision):
        return None
    at = f" at revision {revision}" if revision else ""
    var = offline_variable() or "HF_HUB_OFFLINE"
    return (f"{model}{at} is not in the hub cache {hub_cache()} and {var}=1 keeps the hub off: download it where "
            f"the hub is reachable, unset {var}, or pass a local model directory")


def require_hub(model: str | None, revision: str | None = None) -> None:
    """A hub id must be readable: from the hub, or from the cache when the hub is turned off."""
    if not model or looks_local(str(model)):
        return
    problem = offline_problem(model, revision) if hub_offline() else hub_problem(model, revision)
    if problem:
        raise SetupError(problem)


def server_problem(base_url: str, api_key: str | None = None) -> str | None:
    """None when `{base_url}/models` answers (404 included: some servers list no models). The URL is shown
    masked and any text of the HTTP library that quotes it is masked (server_url.py)."""
    server = ServerURL.parse(base_url, api_key)
    status, reason = probe(server.endpoint("/models"), network_timeout(), server.headers())
    if status is None:
        return (f"OpenAI server at {server.shown} is not usable: {server.mask(reason or '')}; start it first and "
                "wait until it is ready")
    if status in (401, 403):
        return f"OpenAI server at {server.shown} refused the request (HTTP {status}): pass {API_KEY_HINT}"
    if status >= 500:
        return f"OpenAI server at {server.shown} answered HTTP {status} on /models: wait until it is ready"
    return None


def require_server(base_url: str, api_key: str | None = None) -> None:
    problem = server_problem(base_url, api_key)
    if problem:
        raise SetupError(problem)

