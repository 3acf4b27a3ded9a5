"""Credentials in URLs, masked wherever a URL is printed, logged, recorded or exported (docs/reliability.md,
"Secrets"). One rule for every place: the password of a URL's user info, and the value of every query
parameter whose name says it holds a credential, become `***`; a user name without a password is masked
whole (it is how a token is often passed: `https://TOKEN@host`). A user name beside a password stays (it says
which account, not how to get in), as do the scheme, host, port and path a user needs to recognise the URL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, unquote, unquote_plus, urlsplit, urlunsplit

MASK = "***"

# Query parameters that carry a credential, by name (case-insensitive, `-`/`_` alike): api_key, apikey,
# access_token, token, secret, password, sig/signature (pre-signed URLs), auth, key, credential(s), code.
_SECRET_PARAM = re.compile(
    r"^(?:.*(?:key|token|secret|passw(?:or)?d|pwd|auth|credential|signature)s?|sig|code|x-amz-security-token)$",
    re.IGNORECASE)

# A URL inside free text (an exception message, a log line): scheme://, then anything up to white space or a
# closing quote/bracket. Only URLs with user info or a query can hold a secret by this rule.
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>()\[\]{}]+")


def secret_param(name: str) -> bool:
    """Whether a query parameter of this name holds a credential."""
    return bool(_SECRET_PARAM.match(name.replace("-", "_").strip()))


def url_has_secret(url: str) -> bool:
    """Whether masking would change `url` (a password in its user info, or a credential parameter)."""
    return mask_url(url) != url


def mask_url(url: str) -> str:
    """`url` with its user-info password and its credential query values replaced by `***`. A string that is
    not a URL comes back unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user, has_password, _ = userinfo.partition(":")
        # a user name alone is how a token is often passed (https://TOKEN@host): masked whole
        netloc = f"{user}:{MASK}@{host}" if has_password else f"{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(secret_param(name) for name, _ in pairs):
            # rebuilt piece by piece so that the other parameters keep their exact spelling
            pieces = []
            for piece in query.split("&"):
                name, eq, _ = piece.partition("=")
                pieces.append(f"{name}={MASK}" if eq and secret_param(unquote_plus(name)) else piece)
            query = "&".join(pieces)
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def mask_text(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every URL in it masked by `mask_url` (exception messages, tracebacks, log lines), and every
    one of `secrets` (the values `url_secrets` found in a URL the text may quote without its scheme: a
    path and query in an HTTP library's error, a server echoing the request) replaced by `***`."""
    if "://" in text:
        text = _URL_IN_TEXT.sub(lambda m: mask_url(m.group(0)), text)
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):  # longest first: no partial leftovers
        text = text.replace(secret, MASK)
    return text


def url_secrets(url: str) -> tuple[str, ...]:
    """The credentials `mask_url` hides in `url` (the user-info password, the values of credential query
    parameters), as written and percent-decoded, for `mask_text` to find wherever they turn up."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ()
    found: list[str] = []
    if parts.password:
        found.append(parts.password)
    elif parts.username:  # a user name without a password is the credential itself
        found.append(parts.username)
    for piece in parts.query.split("&") if parts.query else ():
        name, eq, value = piece.partition("=")
        if eq and value and secret_param(unquote_plus(name)):
            found.append(value)
    return tuple(dict.fromkeys(form for value in found for form in (value, unquote(value), unquote_plus(value)) if form))
