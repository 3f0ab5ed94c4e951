"""A plain URL is accepted without asking httpx; that shortcut must never accept a URL httpx refuses."""

from __future__ import annotations

import os

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepwise.config.url_checks import MAX_PLAIN_URL_CHARS, PLAIN_URL


# 150 examples in the suite (derandomized: the same ones every run); `make fuzz` runs 500
@settings(
    max_examples=int(os.environ.get("STEPWISE_FUZZ_EXAMPLES", "150")),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(url=st.from_regex(PLAIN_URL, fullmatch=True).filter(lambda url: len(url) <= MAX_PLAIN_URL_CHARS))
def test_every_url_taken_as_plain_is_one_httpx_accepts(url: str) -> None:
    # Given a URL the configuration check takes as plain (and so does not hand to httpx)
    # When httpx (the real client the tools and models use) parses it
    parsed = httpx.URL(url)

    # Then it is accepted, with the host the URL names
    assert parsed.host == url.split("://", 1)[1].split("/", 1)[0].split(":", 1)[0].lower()


def test_an_ipv4_style_host_is_never_taken_as_plain() -> None:
    # Given hosts made of digits and dots, which httpx validates as IPv4 addresses
    urls = ["http://0177.0.0.1:18960", "http://010.0.0.1:80/v1", "https://1.2.3.4/", "http://999"]

    # When the plain form is matched, then none of them is: httpx decides
    assert [url for url in urls if PLAIN_URL.fullmatch(url)] == []
