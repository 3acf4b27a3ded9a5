"""engines/server_url.py: credentials in `--base-url` are sent as the server expects, and never shown."""

import base64

import pytest

from wtb_local.engines.errors import SetupError
from wtb_local.engines.server_url import ServerURL


def test_a_password_in_the_url_is_sent_as_http_basic_and_shown_masked():
    server = ServerURL.parse("http://alice:p%40ss@127.0.0.1:8000/v1/")
    assert server.base == "http://127.0.0.1:8000/v1"
    assert server.endpoint("/models") == "http://127.0.0.1:8000/v1/models"
    assert server.headers() == {"Authorization": "Basic " + base64.b64encode(b"alice:p@ss").decode()}
    assert server.shown == "http://alice:***@127.0.0.1:8000/v1"
    encoded = base64.b64encode(b"alice:p@ss").decode()
    assert server.mask(f"echo p@ss p%40ss {encoded} http://alice:p%40ss@127.0.0.1:8000/v1") == (
        "echo *** *** *** http://alice:***@127.0.0.1:8000/v1")


def test_query_parameters_stay_on_every_request_after_the_path():
    server = ServerURL.parse("https://proxy.example/v1?api_key=k3y&api-version=2024", api_key="sk-1")
    assert server.endpoint("/chat/completions") == "https://proxy.example/v1/chat/completions?api_key=k3y&api-version=2024"
    assert server.headers() == {"Authorization": "Bearer sk-1"}
    assert server.shown == "https://proxy.example/v1?api_key=***&api-version=2024"
    assert server.mask("HTTP 400 for /v1/completions?api_key=k3y (key sk-1)") == (
        "HTTP 400 for /v1/completions?api_key=*** (key ***)")


def test_no_credentials_no_header():
    server = ServerURL.parse("http://127.0.0.1:8000/v1")
    assert server.headers() == {} and server.shown == "http://127.0.0.1:8000/v1" and server.secrets == ()


@pytest.mark.parametrize("url, api_key, line", [
    ("http://alice:pw@127.0.0.1:8000/v1", "sk-1",
     ("--base-url http://alice:***@127.0.0.1:8000/v1 carries a password (sent as HTTP Basic) and --api-key "
      "(WTB_API_KEY) a key (sent as a Bearer token): both would be the one Authorization header; pass one of them")),
    ("127.0.0.1:8000/v1?token=t0k", None,
     "--base-url 127.0.0.1:8000/v1?token=***: expected http(s)://HOST[:PORT]/PATH, e.g. http://127.0.0.1:8000/v1"),
    ("http://alice:pw@127.0.0.1:port/v1", None,
     "--base-url http://alice:***@127.0.0.1:port/v1: not a URL (Port could not be cast to integer value as 'port')"),
])
def test_what_cannot_be_sent_is_refused_in_one_line_without_the_secret(url, api_key, line):
    with pytest.raises(SetupError) as caught:
        ServerURL.parse(url, api_key)
    assert str(caught.value) == line
