"""`--base-url` as given, split into what each request sends (docs/reliability.md, "Secrets").

Credentials written into the URL work as the server expects them: a `user:password` is sent as HTTP Basic
(an HTTP library would otherwise take `user:password@host` for the host name), and query parameters (an
`api_key=...` a proxy wants, an `api-version`) stay on every request, after the endpoint's path. A password
together with `--api-key` is refused: both would be the one Authorization header. Wherever the URL is shown
it is masked by the one rule (contract/secrets.py), and every text that may quote a request (an HTTP
library's error, a server's answer) goes through `mask` before it is printed or recorded.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

from wtb_local.contract.secrets import mask_text, mask_url, url_secrets
from wtb_local.engines.errors import SetupError

API_KEY_HINT = "--api-key (WTB_API_KEY)"


@dataclass(frozen=True)
class ServerURL:
    base: str  # scheme://host[:port]/path: no user info, no query, no trailing slash
    query: str  # sent on every request
    authorization: str | None  # the header's value: HTTP Basic from the user info, else the API key's Bearer
    shown: str  # the URL as given, masked: what messages and records say
    secrets: tuple[str, ...]  # every credential, to mask wherever a text may quote it

    @classmethod
    def parse(cls, url: str, api_key: str | None = None) -> ServerURL:
        try:
            parts = urlsplit(url.strip())
            parts.port  # noqa: B018 - a port that is not a number raises here, not at the first request
        except ValueError as exc:
            raise SetupError(f"--base-url {mask_url(url)}: not a URL ({mask_text(str(exc), url_secrets(url))})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SetupError(f"--base-url {mask_url(url)}: expected http(s)://HOST[:PORT]/PATH, e.g. "
                             "http://127.0.0.1:8000/v1")
        host = parts.netloc.rsplit("@", 1)[-1]
        secrets = url_secrets(url) + ((api_key,) if api_key else ())
        authorization = f"Bearer {api_key}" if api_key else None
        if parts.username is not None or parts.password is not None:
            if api_key and parts.password is not None:
                raise SetupError(f"--base-url {mask_url(url)} carries a password (sent as HTTP Basic) and "
                                 f"{API_KEY_HINT} a key (sent as a Bearer token): both would be the one "
                                 "Authorization header; pass one of them")
            if not api_key:
                pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
                authorization = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
                secrets += (authorization.split(" ", 1)[1],)
        path = parts.path.rstrip("/")
        shown = mask_url(urlunsplit((parts.scheme, parts.netloc, path, parts.query, "")))
        return cls(base=urlunsplit((parts.scheme, host, path, "", "")), query=parts.query,
                   authorization=authorization, shown=shown, secrets=secrets)

    def endpoint(self, path: str) -> str:
        """The URL of `path` (e.g. `/completions`) on this server, the query kept."""
        return self.base + path + (f"?{self.query}" if self.query else "")

    def headers(self) -> dict[str, str]:
        return {"Authorization": self.authorization} if self.authorization else {}

    def mask(self, text: str) -> str:
        """`text` with every URL masked and every credential of this server replaced by `***`."""
        return mask_text(text, self.secrets)
