"""The redactor follows a secret into every form an echo can give it: it decodes the text, it does not list forms.

`ENCODINGS` is the list of forms the canary is tested in, here and end to end (`tests/e2e/
test_secret_encodings_canary.py`, `tests/fuzz/test_pipeline.py`): every form a server was seen or can
reasonably be expected to echo, and combinations no list of forms would hold (double percent-encoding,
every byte escaped, JSON escapes of every character), and what a model restating a secret writes (full-width
letters, characters joined by zero-width joiners or spaced out, reversed, rot13, a part of it).
"""

from __future__ import annotations

import base64
import codecs
import html
import json
import re
from urllib.parse import quote, quote_plus

import pytest

from stepwise.config.redaction import Redactor

# A character of every class an encoding treats apart: upper and lower case letters, digits, '/', '+', '=',
# a space, '&', '<', a double and a single quote, '%', '~', a backslash, a non-ASCII letter and a character
# outside the Basic Multilingual Plane (a surrogate pair in JSON's escapes).
CANARY = "Canary/7f+3a=9 c&2<e\"0bé'%~\\\U0001f600"


def lower_percent(text: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda escape: escape.group().lower(), text)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def every_byte_percent_encoded(data: bytes) -> str:
    return "".join(f"%{byte:02X}" for byte in data)


def json_escapes_of_every_character(text: str) -> str:
    """A `\\u` escape with four hex digits for every UTF-16 code unit, as Go and some JSON writers escape
    (`\\u003c`)."""
    units = text.encode("utf-16-be")
    return "".join(f"\\u{units[index] << 8 | units[index + 1]:04x}" for index in range(0, len(units), 2))


def full_width(text: str) -> str:
    """Each printable ASCII character as its full-width form (U+FF01-FF5E; the space as U+3000)."""
    return "".join(
        chr(ord(char) + 0xFEE0) if "!" <= char <= "~" else "\u3000" if char == " " else char for char in text
    )


def hex_bytes(data: bytes, separator: str) -> str:
    """Each byte as two hex digits, `separator` between them (`63:61:6e`, as certificates and dumps write)."""
    return separator.join(f"{byte:02x}" for byte in data)


def python_escapes(data: bytes) -> str:
    """What `repr(bytes)` writes between its quotes: `\\xNN` for every byte outside printable ASCII."""
    return repr(data)[2:-1]


SECRET_BYTES = CANARY.encode()


def encodings_of(secret: str) -> dict[str, str]:
    """Every form of `secret` the redactor is tested against, by name."""
    data = secret.encode()
    first_half, second_half = secret[: len(secret) // 2].encode(), secret[len(secret) // 2 :].encode()
    return {
        "raw": secret,
        "percent-encoded": quote(secret, safe=""),
        "percent-encoded, lower case": lower_percent(quote(secret, safe="")),
        "percent-encoded keeping slashes": quote(secret),
        "plus for space": quote_plus(secret),
        "plus for space, lower case": lower_percent(quote_plus(secret)),
        "JSON-escaped": json.dumps(secret)[1:-1],
        "JSON-escaped, non-ASCII kept": json.dumps(secret, ensure_ascii=False)[1:-1],
        "HTML-escaped": html.escape(secret),
        "HTML-escaped, quotes kept": html.escape(secret, quote=False),
        "base64": b64(data),
        "base64url": b64url(data),
        "base64 of a Basic credential": b64(b"user:" + data),
        "base64url after two bytes": b64url(b"ab" + data + b"!"),
        "hex": data.hex(),
        "hex, upper case": data.hex().upper(),
        "decimal HTML entities": "".join(f"&#{ord(char)};" for char in secret),
        "hex HTML entities": "".join(f"&#x{ord(char):x};" for char in secret),
        "hex HTML entities, upper case": "".join(f"&#X{ord(char):X};" for char in secret),
        "every byte percent-encoded": every_byte_percent_encoded(data),
        "every byte percent-encoded, lower case": every_byte_percent_encoded(data).lower(),
        "double percent-encoding": quote(quote(secret, safe=""), safe=""),
        "double percent-encoding of every byte": every_byte_percent_encoded(every_byte_percent_encoded(data).encode()),
        "JSON escapes of every character": json_escapes_of_every_character(secret),
        "JSON-escaped twice": json.dumps(json.dumps(secret))[1:-1],
        "Python str escapes": repr(secret)[1:-1],
        "Python ascii() escapes": ascii(secret)[1:-1],
        "Python bytes escapes": python_escapes(data),
        "upper case": secret.upper(),
        "base32": base64.b32encode(data).decode(),
        "base32 after three bytes": base64.b32encode(b"ab:" + data).decode(),
        "base64 of the first half": b64(first_half),
        "base64 of the second half": b64(second_half),
        "base64url of the second half": b64url(second_half),
        "base32 of the first half": base64.b32encode(first_half).decode(),
        "hex of the second half": second_half.hex(),
        "full-width": full_width(secret),
        "zero-width joiners between characters": "\u200d".join(secret),
        "zero-width spaces and soft hyphens between characters": "\u200b\u00ad".join(secret),
        "spaces between characters": " ".join(secret),
        "dots between characters": ".".join(secret),
        "hex with colons": hex_bytes(data, ":"),
        "hex with spaces, upper case": hex_bytes(data, " ").upper(),
        "reversed": secret[::-1],
        "rot13": codecs.encode(secret, "rot13"),
        "base64 of base64": b64(b64(data).encode()),
        "hex of base64": b64(data).encode().hex(),
        "base64url of hex": b64url(data.hex().encode()),
        "the first half": secret[: len(secret) // 2],
        "the second half": secret[len(secret) // 2 :],
        "a part of half its length": secret[5 : 5 + (len(secret) + 1) // 2],
    }


ENCODINGS = encodings_of(CANARY)
# The forms decoding undoes in place: exactly the echoed characters are replaced. (An encoding of the secret
# keeps the few characters at its ends that also carry the bytes around it.)
IN_PLACE = [
    "raw",
    "full-width",
    "zero-width joiners between characters",
    "zero-width spaces and soft hyphens between characters",
    "spaces between characters",
    "dots between characters",
    "hex with colons",
    "hex with spaces, upper case",
    "reversed",
    "rot13",
    "the first half",
    "the second half",
    "a part of half its length",
]


@pytest.mark.parametrize("form", ENCODINGS.values(), ids=ENCODINGS.keys())
def test_each_encoding_of_a_secret_is_redacted_inside_ordinary_text(form: str) -> None:
    # Given a redactor that knows the canary, and a text holding one encoding of it
    text = f"the server said: token={form}; done"

    # When it is redacted
    redacted = Redactor([CANARY]).redact(text)

    # Then no encoding of the canary is left, and the text around it is
    assert [name for name, other in ENCODINGS.items() if other in redacted] == []
    assert redacted.startswith("the server said: token=") and redacted.endswith("; done")


@pytest.mark.parametrize("name", IN_PLACE)
def test_a_form_decoded_in_place_is_replaced_exactly(name: str) -> None:
    # Given a text holding a form of the canary that decoding undoes in place, in brackets
    text = f"before [{ENCODINGS[name]}] after"

    # When it is redacted, then exactly that form was replaced
    assert Redactor([CANARY]).redact(text) == "before [***] after"


def test_a_secret_spaced_out_among_other_spaced_out_characters_is_replaced_without_their_separators() -> None:
    # Given a key spelled out between other characters spelled out the same way
    key = "sk-proj-Zq7vN2xK9mW4bR8tL1cY6hJ3"
    text = "k e y : " + " ".join(key) + " ! ! !"

    # When it is redacted, then exactly the key's characters and the separators between them are replaced
    assert Redactor([key]).redact(text) == "k e y : *** ! ! !"


def test_a_part_longer_than_half_the_secret_is_replaced_whole() -> None:
    # Given a key, and a text holding all of it but its first and last two characters
    key = "sk-proj-Zq7vN2xK9mW4bR8tL1cY6hJ3"
    text = f"it was {key[2:-2]}, really"

    # When it is redacted, then the whole echoed piece is gone, not only a part of half the key's length
    assert Redactor([key]).redact(text) == "it was ***, really"


def test_a_short_keys_parts_are_found_but_a_word_or_a_number_in_a_key_is_not() -> None:
    # Given a 9-character random key, a 9-character key that is a word and a digit, and one that is a date
    redactor = Redactor(["x7Kp2mQ9z", "Password1", "2024-01-15"])
    # When texts holding a part of each (8 characters, the least part searched), and the keys, are redacted
    texts = ["got x7Kp2mQ9 back", "enter your password here", "due 2024-01-16", "Password1 and 2024-01-15"]
    redacted = [redactor.redact(text) for text in texts]

    # Then the random key's part is replaced; a common word and a date that are parts of a key stay, and a
    # whole key is still replaced wherever it is
    assert redacted == ["got *** back", "enter your password here", "due 2024-01-16", "*** and ***"]


def test_ordinary_text_is_left_as_it_is() -> None:
    text = "Paris is 14 °C & cloudy; base64 dGVzdA== and hex 0a0b"
    assert Redactor([CANARY]).redact(text) == text


def test_escapes_around_a_secret_are_left_as_they_were() -> None:
    # Given a document whose every byte is percent-encoded, the secret among other words
    document = every_byte_percent_encoded(b"before " + SECRET_BYTES + b" after")

    # When it is redacted
    redacted = Redactor([CANARY]).redact(document)

    # Then exactly the secret's escapes were replaced, the words around it still encoded as they were
    assert redacted == every_byte_percent_encoded(b"before ") + "***" + every_byte_percent_encoded(b" after")


def test_text_with_escapes_of_other_things_is_left_as_it_is() -> None:
    text = 'C:\\new\\table 100%25 sure &amp; \\u00e9t\\u00e9 &#x43;anary "quoted\\"" %ZZ &#99999999999;'
    assert Redactor([CANARY]).redact(text) == text


def test_a_hex_form_after_a_percent_sign_is_still_found() -> None:
    # Given the hex of the secret right after a '%', which decoding would read as the escape '%43'
    text = "100%" + SECRET_BYTES.hex()

    # When it is redacted, then the hex is gone all the same
    assert Redactor([CANARY]).redact(text) == "100%***"


def test_a_short_secret_is_redacted_as_a_whole_value_only() -> None:
    # Given a redactor that knows a one-letter key (what local model servers accept)
    redactor = Redactor(["x"])

    # When a value that is the key, and texts holding the letter, are redacted
    redacted = [redactor.redact(text) for text in ["x", " x\n", "x-ray and max", "Bearer x"]]

    # Then only the whole value is replaced: nothing else can be without mangling the text
    assert redacted == ["***", "***", "x-ray and max", "Bearer x"]
