"""Undoing what an echo does to a value: escapes, compatibility characters, separators, letter case.

`normalize` decodes a text round after round until nothing changes (double encodings included): percent
escapes, HTML entities, backslash escapes, and Unicode compatibility forms (NFKC: full-width letters,
ligatures, circled digits) with format characters (category Cf: zero-width joiners and spaces, soft
hyphens, direction marks) removed. Then it joins what is written one character at a time with a separator
between every character (`s e c r e t`, `s-e-c-r-e-t`, hex bytes as `73:65:63`). It keeps, for every
character of every stage, the span of the original text it came from, so that something found in the
decoded text can be replaced in the original (`stepwise.config.redaction` finds secrets so).

Time is linear in the text: each round is a few regular-expression passes without nested quantifiers,
and the rounds are bounded (`MAX_DECODING_ROUNDS`). No library decodes text while keeping track of where
each character came from; `html.unescape` and `unicodedata.normalize` do the decoding itself.
"""

from __future__ import annotations

import bisect
import html
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# Decoding rounds, each undoing one layer of percent, entity and backslash escaping. An echo encodes a
# value once or twice; a text nested deeper than this is not an echo, and more rounds would only let it
# buy time (each round costs a pass over the text).
MAX_DECODING_ROUNDS = 8


# Where a decoded piece came from: output characters [out_start, out_end) were input [in_start, in_end),
# laid out as (pitch, group, width): output character i came from the `width` input characters starting at
# in_start + (k // group) * pitch + (k % group) * width, k = i - out_start. A run of `%41%42` is (3, 1, 3),
# spaced-out characters `a b c` (2, 1, 1), hex bytes `61:62` (3, 2, 1). With pitch 0 the piece is atomic. A
# plain tuple: a text of escapes makes one a piece, and an object each would cost more than the decoding.
_Segment = tuple[int, int, int, int, int, int, int]


class _Layer:
    """One decoding step's map from its output positions back to its input positions."""

    def __init__(self, segments: list[_Segment]) -> None:
        self._segments = segments
        self._starts = [segment[0] for segment in segments]

    def _segment_of(self, position: int) -> _Segment | None:
        index = bisect.bisect_right(self._starts, position) - 1
        return self._segments[index] if index >= 0 else None

    def start(self, position: int) -> int:
        """The input position where output character `position` begins."""
        segment = self._segment_of(position)
        if segment is None:
            return position
        out_start, out_end, in_start, in_end, pitch, group, width = segment
        if position < out_end:
            offset = position - out_start
            return in_start + (offset // group) * pitch + (offset % group) * width
        return in_end + (position - out_end)

    def end(self, position: int) -> int:
        """The input position just after output character `position - 1` (an exclusive end)."""
        if position <= 0:
            return 0
        segment = self._segment_of(position - 1)
        if segment is None:
            return position
        out_start, out_end, in_start, in_end, pitch, group, width = segment
        if position - 1 < out_end:
            if not pitch:
                return in_end
            offset = position - 1 - out_start
            return in_start + (offset // group) * pitch + (offset % group) * width + width
        return in_end + (position - out_end)


@dataclass
class Normalized:
    """A text at each stage of its decoding, case-folded, with the way back to the original's positions.

    Stage 0 is the text itself; each later stage has one more layer of escaping undone. Secrets are
    searched at every stage, not only the last: a form visible as it is can be broken by decoding the text
    around it (a `%` just before a hex form makes `%43` of its first digits), and each stage costs one pass.
    """

    stages: list[str]
    _layers: list[_Layer]

    @property
    def text(self) -> str:
        """The fully decoded, case-folded text."""
        return self.stages[-1]

    def original_span(self, start: int, end: int, stage: int | None = None) -> tuple[int, int]:
        """The span of the original text that [start, end) of `stage` (the last by default) came from."""
        count = len(self._layers) if stage is None else stage
        for layer in reversed(self._layers[:count]):
            start, end = layer.start(start), layer.end(end)
        return start, end


# A decoder turns one match into pieces: (start, end) within the match, the text they decode to, and the
# stride when each character of that text came from `stride` characters of the match (0: atomic).
_Piece = tuple[int, int, str, int]
_Decoder = Callable[[re.Match[str]], list[_Piece] | None]

_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})++")
_ENTITY = re.compile(r"&(?:#[0-9]{1,10}|#[xX][0-9A-Fa-f]{1,8}|[A-Za-z][A-Za-z0-9]{1,31});?")
# Runs are possessive (`++`): Python's engine keeps backtracking state for every repetition of a group, which
# made a megabyte of backslashes cost 70 times what 100 KB did; nothing here ever needs to give a character back.
# A run of escaped backslashes (one piece, however long), a run of \xNN (Python's bytes and str escapes),
# or one other backslash escape: a surrogate pair as two \u escapes (JSON's form of a character outside the
# BMP), \u, \U, octal, or a one-character escape.
_BACKSLASH = re.compile(
    r"(?P<backslashes>(?:\\\\)++)|(?P<bytes>(?:\\x[0-9A-Fa-f]{2})++)"
    r"|\\(?:u(?P<high>[dD][89abAB][0-9A-Fa-f]{2})\\u(?P<low>[dD][c-fC-F][0-9A-Fa-f]{2})"
    r"|u(?P<u4>[0-9A-Fa-f]{4})|U(?P<u8>[0-9A-Fa-f]{8})|(?P<octal>[0-7]{1,3})|(?P<char>[\\/\"'abfnrtv]))"
)
_SIMPLE_ESCAPES = {
    "\\": "\\",
    "/": "/",
    '"': '"',
    "'": "'",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}
# U+0130 is the one character whose lower case is two characters; positions must not move.
_SAME_LENGTH_LOWER = str.maketrans({"\u0130": "i"})


def _byte_run_pieces(data: bytes, width: int) -> list[_Piece]:
    """Pieces of a run of escaped bytes, `width` characters each: UTF-8 where it decodes, else one byte each."""
    if data.isascii():
        return [(0, len(data) * width, data.decode("ascii"), width)]
    pieces: list[_Piece] = []
    index = 0
    while index < len(data):
        lead = data[index]
        size = 1 if lead < 0x80 else 2 if lead >> 5 == 6 else 3 if lead >> 4 == 14 else 4 if lead >> 3 == 30 else 1
        try:
            char = data[index : index + size].decode("utf-8")
        except UnicodeDecodeError:
            # Latin-1: what a `\xe9` in a Python str means, and a harmless guess for a stray byte.
            size, char = 1, chr(lead)
        pieces.append((index * width, (index + size) * width, char, 0))
        index += size
    return pieces


def _percent(match: re.Match[str]) -> list[_Piece]:
    return _byte_run_pieces(bytes.fromhex(match.group().replace("%", "")), 3)


def _entity(match: re.Match[str]) -> list[_Piece] | None:
    decoded = html.unescape(match.group())
    return None if decoded == match.group() or not decoded else [(0, len(match.group()), decoded, 0)]


def _backslash(match: re.Match[str]) -> list[_Piece] | None:
    whole = (0, len(match.group()))
    pieces: list[_Piece]
    if match["backslashes"]:
        return [(*whole, "\\" * (whole[1] // 2), 2)]
    if match["bytes"]:
        return _byte_run_pieces(bytes.fromhex(match["bytes"].replace("\\x", "")), 4)
    if match["high"]:
        high, low = int(match["high"], 16), int(match["low"], 16)
        pieces = [(*whole, chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)), 0)]
    elif match["u4"] or match["octal"]:
        pieces = [(*whole, chr(int(match["u4"], 16) if match["u4"] else int(match["octal"], 8)), 0)]
    elif match["u8"]:
        code = int(match["u8"], 16)
        pieces = [(*whole, chr(code), 0)] if code <= 0x10FFFF else []
    else:
        pieces = [(*whole, _SIMPLE_ESCAPES[match["char"]], 0)]
    return pieces


# A run of non-ASCII characters with the character before it, which a combining mark may compose with.
_NON_ASCII_RUN = re.compile(r".?[^\x00-\x7f]+", re.DOTALL)


# A stretch this short is folded a character at a time; a longer one that needs folding is halved first,
# so that a long text with a few characters to fold (Chinese with full-width punctuation) is checked in C.
_FOLDED_ONE_BY_ONE = 64


def _compatibility(match: re.Match[str]) -> list[_Piece] | None:
    """NFKC of each character with its combining marks, format characters (Cf) removed; None if unchanged."""
    chunk = match.group()
    pieces: list[_Piece] = []
    kept_from = 0  # where the current run of unchanged characters began
    for start, end, folded in _folded_units(chunk, 0, len(chunk)):
        if kept_from < start:
            pieces.append((kept_from, start, chunk[kept_from:start], 1))
        pieces.append((start, end, folded, 0))
        kept_from = end
    if not pieces:
        return None
    if kept_from < len(chunk):
        pieces.append((kept_from, len(chunk), chunk[kept_from:], 1))
    return pieces


def _folded_units(chunk: str, start: int, end: int) -> Iterator[tuple[int, int, str]]:
    """Each character of `chunk[start:end]` (with the combining marks after it) that folding changes, where
    it is and what it becomes, in order.

    A character at a time, so each keeps its origin: NFKC composes only a character with the marks that
    follow it (Hangul jamo aside, which no echo writes apart). Format characters are not printable, so a
    printable stretch already in NFKC needs nothing.
    """
    stretch = chunk[start:end]
    if stretch.isprintable() and unicodedata.is_normalized("NFKC", stretch):
        return
    if end - start > _FOLDED_ONE_BY_ONE:
        middle = (start + end) // 2
        while middle < end and unicodedata.combining(chunk[middle]):
            middle += 1  # never between a character and its marks
        if middle < end:
            yield from _folded_units(chunk, start, middle)
            yield from _folded_units(chunk, middle, end)
            return
    index = start
    while index < end:
        unit_end = index + 1
        while unit_end < end and unicodedata.combining(chunk[unit_end]):
            unit_end += 1
        unit = chunk[index:unit_end]
        folded = unicodedata.normalize("NFKC", unit)
        if not folded.isprintable():
            folded = "".join(char for char in folded if unicodedata.category(char) != "Cf")
        if folded != unit:
            yield index, unit_end, folded
        index = unit_end


# Each decoder runs only on a text its trigger says may hold something for it (a cheap test in C).
_DECODERS: tuple[tuple[Callable[[str], bool], re.Pattern[str], _Decoder], ...] = (
    (lambda text: "%" in text, _PERCENT_RUN, _percent),
    (lambda text: "&" in text, _ENTITY, _entity),
    (lambda text: "\\" in text, _BACKSLASH, _backslash),
    (lambda text: not text.isascii(), _NON_ASCII_RUN, _compatibility),
)

# Characters written one at a time with the same separator between every one (`s e c r e t`, `s-e-c-r-e-t`),
# at least `_MIN_SEPARATED` of them, or bytes in hex the same way (`73:65:63:72`). A separated character may
# be the separator itself (a space of the value written between spaces). The match starts at the first
# separator, so the engine skips to the next separator character at C speed; the first character, before
# it, stays as it is. Fewer characters than the shortest redacted value cannot hold one; every quantifier
# repeats a fixed-width unit, so nothing backtracks far.
_MIN_SEPARATED = 8
_SEPARATED = re.compile(
    r"(?P<separator>[ \t.,:;_|/~+*=-])(?:(?P<pairs>(?:[0-9A-Fa-f]{2}(?P=separator)){2,}[0-9A-Fa-f]{2})"
    rf"|(?:[^\n](?P=separator)){{{_MIN_SEPARATED - 2},}}[^\n])"
)


def _join_separated(text: str) -> tuple[str, _Layer] | None:
    """`text` with each separated run's separators left out, and the map back; None when it has no run.

    A run is one segment however long it is, laid out as its characters (or hex pairs) at every other place.
    """
    parts: list[str] = []
    segments: list[_Segment] = []
    copied = 0  # input copied up to here
    length = 0  # output written so far
    for match in _SEPARATED.finditer(text):
        group = 2 if match["pairs"] else 1
        # the run without its first separator; its first character (or pair) is before the match
        run = match.group()[1:]
        joined = "".join(run[start : start + group] for start in range(0, len(run), group + 1))
        parts += [text[copied : match.start()], joined]
        length += match.start() - copied
        segments.append((length, length + len(joined), match.start() + 1, match.end(), group + 1, group, 1))
        length += len(joined)
        copied = match.end()
    if not segments:
        return None
    parts.append(text[copied:])
    return "".join(parts), _Layer(segments)


def _decode(text: str, pattern: re.Pattern[str], decoder: _Decoder) -> tuple[str, _Layer] | None:
    """`text` with every match of `pattern` decoded, and the map back; None when nothing changed."""
    parts: list[str] = []
    segments: list[_Segment] = []
    copied = 0  # input copied up to here
    length = 0  # output written so far
    for match in pattern.finditer(text):
        pieces = decoder(match)
        if not pieces:
            continue
        gap = match.start() - copied
        parts.append(text[copied : match.start()])
        length += gap
        for start, end, decoded, stride in pieces:
            in_start, in_end = match.start() + start, match.start() + end
            segments.append((length, length + len(decoded), in_start, in_end, stride, 1, stride))
            parts.append(decoded)
            length += len(decoded)
        copied = match.end()
    if not segments:
        return None
    parts.append(text[copied:])
    return "".join(parts), _Layer(segments)


def normalize(text: str, *, join_separated: bool = True) -> Normalized:
    """`text` with percent escapes, HTML entities, backslash escapes and compatibility forms undone, to a
    fixed point of at most `MAX_DECODING_ROUNDS` rounds, then (with `join_separated`) what was written with a
    separator between every character joined; every stage in lower case; each character keeps the span it
    came from."""
    layers: list[_Layer] = []
    stages = [_lower(text)]
    for _ in range(MAX_DECODING_ROUNDS):
        changed = False
        for may_hold, pattern, decoder in _DECODERS:
            if not may_hold(text):
                continue
            decoded = _decode(text, pattern, decoder)
            if decoded is not None:
                text, layer = decoded
                layers.append(layer)
                stages.append(_lower(text))
                changed = True
        if not changed:
            break
    joined = _join_separated(text) if join_separated else None
    if joined is not None:
        layers.append(joined[1])
        stages.append(_lower(joined[0]))
    return Normalized(stages, layers)


def _lower(text: str) -> str:
    """`text` in lower case, every character keeping its position."""
    return text.translate(_SAME_LENGTH_LOWER).lower()
