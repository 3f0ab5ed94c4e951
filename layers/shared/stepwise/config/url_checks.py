"""The URLs a configuration gives (an HTTP API's, a model server's), checked as the HTTP client will read them."""

import re
from urllib.parse import urlsplit

# A URL of this form is one httpx always accepts: an ASCII host name that is no IPv4-style address (which
# httpx validates), an optional numeric port, a path of unreserved characters. Checking such a URL needs
# no import of httpx, which the model URLs of a configuration would otherwise load into every handler
# that reads it, a Bedrock-only LLMCall or a Parse included.
PLAIN_URL = re.compile(
    r"https?://(?![0-9.]+(?::|/|$))[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~/-]*)?"
)
MAX_PLAIN_URL_CHARS = 2048


def validated_http_url(url: str, *, what: str = "url") -> str:
    """An http(s) URL with a host and no credentials, query or fragment, without its trailing slash."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{what} {url!r} must use http or https")
    if not parts.hostname:
        raise ValueError(f"{what} {url!r} has no host")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{what} of {parts.hostname} must not hold credentials; use apiKey")
    if parts.query or parts.fragment:
        raise ValueError(f"{what} {url!r} must not hold a query or fragment")
    try:
        parts.port  # noqa: B018 - reading it validates the port
    except ValueError:
        raise ValueError(f"{what} {url!r} has an invalid port") from None
    check_client_url(url, what=what)
    return url.rstrip("/")


def check_client_url(url: str, *, what: str = "url") -> None:
    """Raise `ValueError` for a URL the HTTP client would refuse (`0177.0.0.1` is no IPv4 address to httpx)."""
    if len(url) <= MAX_PLAIN_URL_CHARS and PLAIN_URL.fullmatch(url):
        return
    import httpx

    try:
        httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"{what} {url!r} cannot be used: {exc}") from None
