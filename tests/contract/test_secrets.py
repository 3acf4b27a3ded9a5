"""contract/secrets.py: the one masking rule for credentials in URLs."""

import pytest

from wtb_local.contract.secrets import mask_text, mask_url, secret_param, url_has_secret, url_secrets


@pytest.mark.parametrize("url, masked", [
    ("http://user:pw@host:8000/v1", "http://user:***@host:8000/v1"),
    ("https://user@host/v1", "https://***@host/v1"),  # a bare user name may be a token
    ("https://ghp_T0KEN@host/v1", "https://***@host/v1"),
    ("http://host/v1?api_key=abc123&model=x", "http://host/v1?api_key=***&model=x"),
    ("http://host/v1?model=x&access_token=t0k", "http://host/v1?model=x&access_token=***"),
    ("https://bucket/obj?X-Amz-Signature=deadbeef&X-Amz-Date=1", "https://bucket/obj?X-Amz-Signature=***&X-Amz-Date=1"),
    ("http://a:b@host/?token=1&page=2", "http://a:***@host/?token=***&page=2"),
    ("http://host/v1?monkey=1", "http://host/v1?monkey=***"),  # ends in "key": masked, erring on the safe side
    ("http://host/v1", "http://host/v1"),
    ("runs/mlruns", "runs/mlruns"),
    ("file:///tmp/mlruns", "file:///tmp/mlruns"),
])
def test_mask_url(url, masked):
    assert mask_url(url) == masked
    assert url_has_secret(url) == (url != masked)


def test_mask_text_masks_every_url_in_a_message():
    text = ("Connection refused: http://u:s3cret@127.0.0.1:9/api/2.0 (retries) and "
            "'https://h/x?apikey=K3Y' then http://plain/")
    assert mask_text(text) == ("Connection refused: http://u:***@127.0.0.1:9/api/2.0 (retries) and "
                               "'https://h/x?apikey=***' then http://plain/")
    assert "s3cret" not in mask_text(text) and "K3Y" not in mask_text(text)


@pytest.mark.parametrize("name, secret", [
    ("api_key", True), ("api-key", True), ("APIKEY", True), ("token", True), ("password", True),
    ("sig", True), ("client_secret", True), ("model", False), ("page", False), ("limit", False),
])
def test_secret_param(name, secret):
    assert secret_param(name) is secret


def test_url_secrets_are_the_values_mask_url_hides_as_written_and_decoded():
    assert url_secrets("http://alice:p%40ss@host/v1?api_key=k+1&model=m&token=t%2F2") == (
        "p%40ss", "p@ss", "k+1", "k 1", "t%2F2", "t/2")
    assert url_secrets("http://alice@host/v1?model=m") == ("alice",)
    assert url_secrets("runs/mlruns") == ()


def test_mask_text_replaces_known_secrets_wherever_a_text_quotes_them():
    # an HTTP library quoting the path and query without the scheme: the URL pattern alone cannot see it
    text = "URL can't contain control characters. '/v1/models?api_key=k3y s3cret' (found at least ' ')"
    assert mask_text(text, ("k3y s3cret", "")) == (
        "URL can't contain control characters. '/v1/models?api_key=***' (found at least ' ')")
    assert mask_text("token abcd and abc", ("abc", "abcd")) == "token *** and ***"  # the longer one first
