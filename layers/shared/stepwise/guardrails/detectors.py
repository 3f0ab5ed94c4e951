"""Local detectors of personal data: each finds candidates with a bounded pattern, then checks them.

Cards are kept only when their digits pass the Luhn check and IBANs only when they pass ISO 13616's
mod-97 check, so an order number or a timestamp is not taken for one. Every pattern has bounded
repetitions, so a search costs at most a fixed amount per character of the text (a long run of letters
with no `@` is not read again from each of its positions past the bound).

Hand-written: the libraries that do this (Presidio, scrubadub) bring NLP models and tens of megabytes to
a Lambda layer for five patterns and two checksums.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from stepwise.config.guardrails import PiiKind

_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}\b"
)
# at most 15 digits (E.164), and never a part of a longer run of digits
_PHONE = re.compile(
    r"(?<![\w+])(?<!\d[ ().-])(?<!\d[ ().-][ ().-])\+?\(?\d(?:[ ().-]{0,2}\d){7,14}(?!\w|[ ().-]{1,2}\d)"
)
# Dates and times are digit runs too: a candidate that starts like one is not a phone number.
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}[./]\d{1,2}[./]\d{2,4}")
_AWS_KEY = re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[A-Z0-9]{16}\b")
# A phone number has at least this many digits (shorter runs are amounts, years, codes).
_MIN_PHONE_DIGITS = 9


@dataclass(frozen=True)
class Found:
    """One value found: its kind and where it is (never kept beyond the redaction that uses it)."""

    kind: PiiKind
    start: int
    end: int


def luhn_valid(digits: str) -> bool:
    """True when the digit string passes the Luhn check (the last digit is the check digit)."""
    total = 0
    for position, character in enumerate(reversed(digits)):
        value = int(character)
        if position % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def iban_valid(candidate: str) -> bool:
    """True when `candidate` (no spaces) passes the IBAN mod-97 check: the first four characters moved to
    the end, letters read as 10 to 35, the number modulo 97 is 1."""
    if not 15 <= len(candidate) <= 34 or not candidate.isalnum():
        return False
    moved = candidate[4:] + candidate[:4]
    number = "".join(str(int(character, 36)) for character in moved)
    return int(number) % 97 == 1


def _cards(text: str) -> Iterator[tuple[int, int]]:
    for match in _CARD.finditer(text):
        digits = re.sub(r"[ -]", "", match.group())
        if 13 <= len(digits) <= 19 and luhn_valid(digits):
            yield match.span()


def _ibans(text: str) -> Iterator[tuple[int, int]]:
    for match in _IBAN.finditer(text):
        # a spaced IBAN may run on into the next word: try it cut at each space, longest first
        piece = match.group()
        ends = [len(piece)] + [index for index in range(len(piece) - 1, 0, -1) if piece[index] == " "]
        for end in ends:
            if iban_valid(piece[:end].replace(" ", "")):
                yield match.start(), match.start() + end
                break


def _spans(pattern: re.Pattern[str]) -> Callable[[str], Iterator[tuple[int, int]]]:
    def find(text: str) -> Iterator[tuple[int, int]]:
        for match in pattern.finditer(text):
            yield match.span()

    return find


def _phones(text: str) -> Iterator[tuple[int, int]]:
    for match in _PHONE.finditer(text):
        number = match.group()
        if sum(character.isdigit() for character in number) >= _MIN_PHONE_DIGITS and not _DATE.match(number):
            yield match.span()


# Checked in this order, each on the text the earlier ones redacted: a card number is not also a phone.
DETECTORS: dict[PiiKind, Callable[[str], Iterator[tuple[int, int]]]] = {
    "aws_key": _spans(_AWS_KEY),
    "iban": _ibans,
    "card": _cards,
    "email": _spans(_EMAIL),
    "phone": _phones,
}


def redact_pii(text: str, kinds: list[PiiKind]) -> tuple[str, dict[PiiKind, int]]:
    """`text` with every value of `kinds` replaced by its typed marker (`[card]`), and how many of each."""
    counts: dict[PiiKind, int] = {}
    for kind, detect in DETECTORS.items():
        if kind not in kinds:
            continue
        spans = list(detect(text))
        if not spans:
            continue
        counts[kind] = len(spans)
        marker = f"[{kind}]"
        parts: list[str] = []
        position = 0
        for start, end in spans:
            parts.append(text[position:start])
            parts.append(marker)
            position = end
        parts.append(text[position:])
        text = "".join(parts)
    return text, counts
