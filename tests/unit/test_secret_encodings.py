"""The redactor follows a secret into every form it commonly travels in."""

from __future__ import annotations

import base64
import html
import json
import re
from urllib.parse import quote, quote_plus

import pytest

from stepwise.config.credentials import Redactor

# '/', '+', '=', a space, '&', '<', a quote and a non-ASCII letter: every encoding below changes it.
CANARY = 'canary/7f+3a=9 c&2<e"0bé'


def lower_percent(text: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda escape: escape.group().lower(), text)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


SECRET_BYTES = CANARY.encode()
ENCODINGS = {
    "raw": CANARY,
    "percent-encoded": quote(CANARY, safe=""),
    "percent-encoded, lower case": lower_percent(quote(CANARY, safe="")),
    "percent-encoded keeping slashes": quote(CANARY),
    "plus for space": quote_plus(CANARY),
    "plus for space, lower case": lower_percent(quote_plus(CANARY)),
    "JSON-escaped": json.dumps(CANARY)[1:-1],
    "JSON-escaped, non-ASCII kept": json.dumps(CANARY, ensure_ascii=False)[1:-1],
    "HTML-escaped": html.escape(CANARY),
    "HTML-escaped, quotes kept": html.escape(CANARY, quote=False),
    "base64": b64(SECRET_BYTES),
    "base64url": b64url(SECRET_BYTES),
    "base64 of a Basic credential": b64(b"user:" + SECRET_BYTES),
    "base64url after two bytes": b64url(b"ab" + SECRET_BYTES + b"!"),
    "hex": SECRET_BYTES.hex(),
    "hex, upper case": SECRET_BYTES.hex().upper(),
}


@pytest.mark.parametrize("form", ENCODINGS.values(), ids=ENCODINGS.keys())
def test_each_encoding_of_a_secret_is_redacted_inside_ordinary_text(form: str) -> None:
    # Given a redactor that knows the canary, and a text holding one encoding of it
    text = f"the server said: token={form}; done"

    # When it is redacted
    redacted = Redactor([CANARY]).redact(text)

    # Then no encoding of the canary is left, and the text around it is
    assert [name for name, other in ENCODINGS.items() if other in redacted] == []
    assert redacted.startswith("the server said: token=") and redacted.endswith("; done")


def test_ordinary_text_is_left_as_it_is() -> None:
    text = "Paris is 14 °C & cloudy; base64 dGVzdA== and hex 0a0b"
    assert Redactor([CANARY]).redact(text) == text
