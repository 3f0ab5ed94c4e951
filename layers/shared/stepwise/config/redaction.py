"""Redaction of known secret values from any text, by decoding what an echo may have done to them.

A server that echoes a credential rarely echoes it raw: it percent-encodes it (once or twice, every byte
or only some), writes it as HTML entities (named, decimal or hex), as JSON or Python escapes (`\\u0041`,
Go's `\\u003c`, `\\x41`), upper-cases it, or base64/base64url/base32/hex-encodes it (often inside a Basic
credential, so at any byte alignment). Listing every such form of a secret can never be complete, as
each combination is another form. So the text is *decoded* instead: `normalize` undoes percent escapes,
HTML entities and backslash escapes, round after round until nothing changes (double encodings
included), and folds case. The secret's own forms are reduced the same way and searched in that
normal text; what remains listed are the encodings that cannot be undone in place (base64, base64url,
base32 and hex, which depend on where the secret starts), each for the secret and for its two halves.
Every match is mapped back to the span of the original text it came from (`stepwise.inputs.echo_decoding`),
and that span is replaced.

Time is linear in the text: the decoding is (see there), and the forms are searched in one pass a stage.
This runs on every stored string and every log record, so it has to be; `bench/adversarial_inputs.py`
measures it.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
import weakref
from collections.abc import Callable, Iterable

from stepwise.inputs.echo_decoding import Normalized, normalize

REDACTION_MARK = "***"

# Replacing a value this short inside text would mangle it (every "x", or "ollama" in a sentence about
# Ollama) while protecting little: a credential that short is guessable anyway. Such a secret is still
# accepted (local model servers take any key) and replaced where it is a whole value.
MIN_REDACTED_LENGTH = 8

# A secret cut by a response cap: a surviving beginning this long at the very end is still replaced.
_MIN_CUT_PREFIX = 4

# The one logger of the service is built on top of this module (its log guard redacts with it), so the
# warning goes to the standard logger of the same name.
_logger = logging.getLogger("stepwise")


def _aligned_middles(data: bytes, encode: Callable[[bytes], bytes], bits: int, alignments: int) -> set[str]:
    """The characters of `encode(prefix + data)` that depend on `data` alone, for each length of prefix.

    Base64 and base32 write `bits` bits a character, so what a secret encodes to depends on how many bytes
    come before it (a Basic credential's `user:`); the characters wholly inside the secret do not.
    """
    middles = set()
    for offset in range(alignments):
        encoded = encode(b"\0" * offset + data).decode("ascii")
        middles.add(encoded[-(-8 * offset // bits) : 8 * (offset + len(data)) // bits])
    return middles


def _encoded_forms(data: bytes) -> set[str]:
    """base64, base64url, base32 and hex of `data`, at every alignment: the encodings decoding cannot undo."""
    base64_forms = _aligned_middles(data, base64.b64encode, 6, 3)
    return {
        data.hex(),
        *base64_forms,
        *(form.replace("+", "-").replace("/", "_") for form in base64_forms),
        *_aligned_middles(data, base64.b32encode, 5, 5),
    }


def secret_forms(secret: str) -> set[str]:
    """The normal forms of `secret` searched for in normal text, each long enough to redact safely.

    The secret itself (with `+` for a space, as a query string writes it), and base64/base64url/base32/hex
    of the secret and of each of its halves (an echo may encode the parts of a credential apart).
    """
    halves = (secret[: len(secret) // 2], secret[len(secret) // 2 :])
    forms = {secret, secret.replace(" ", "+")}
    for part in (secret, *halves):
        forms |= _encoded_forms(part.encode("utf-8"))
    normal = {normalize(form).text for form in forms}
    return {form for form in normal if len(form) >= MIN_REDACTED_LENGTH}


def _replace_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each span (merged where they overlap or touch) replaced by the mark."""
    if not spans:
        return text
    spans.sort()
    parts: list[str] = []
    position = 0
    current_start, current_end = spans[0]
    for start, end in spans[1:]:
        if start <= current_end:
            current_end = max(current_end, end)
            continue
        parts += [text[position:current_start], REDACTION_MARK]
        position = current_end
        current_start, current_end = start, end
    parts += [text[position:current_start], REDACTION_MARK, text[current_end:]]
    return "".join(parts)


class Redactor:
    """Replaces every known secret value with ``***`` in any text, whatever an echo did to it.

    Thread-safe: tools may run side by side. Every redactor alive is also applied by
    `redact_known_secrets`, which the log guard and the store use as the last line of defence.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._forms: tuple[str, ...] = ()
        self._pattern: re.Pattern[str] | None = None
        self._whole_values: frozenset[str] = frozenset()
        for secret in secrets:
            self.add(secret)
        _LIVE_REDACTORS.add(self)

    def add(self, secret: str) -> None:
        """Remember a secret value so that `redact` scrubs it from now on.

        A value under `MIN_REDACTED_LENGTH` characters (a local model server's `ollama` or `x`) is accepted
        with a warning, and replaced only where it is a whole value: inside text, replacing it would mangle
        the text around it.
        """
        if not secret:
            return
        if len(secret) < MIN_REDACTED_LENGTH:
            with self._lock:
                self._whole_values |= {secret}
            _warn_once_too_short(secret)
            return
        with self._lock:
            # Longest first, so a form that contains another is replaced whole.
            self._forms = tuple(sorted(set(self._forms) | secret_forms(secret), key=len, reverse=True))
            self._pattern = re.compile("|".join(re.escape(form) for form in self._forms))

    def matches(self, normal: Normalized, *, cut_at_end: bool = False) -> list[tuple[int, int]]:
        """The spans of the original text where a known secret was found in its normal form."""
        pattern = self._pattern
        if pattern is None:
            return []
        spans = [
            normal.original_span(*match.span(), stage)
            for stage, text in enumerate(normal.stages)
            for match in pattern.finditer(text)
        ]
        if cut_at_end:
            for stage in {0, len(normal.stages) - 1}:
                tail = _cut_tail(normal.stages[stage], self._forms)
                if tail is not None:
                    spans.append(normal.original_span(tail, len(normal.stages[stage]), stage))
        return spans

    def is_whole_value(self, text: str) -> bool:
        """True when `text`, stripped, is one of the short secrets (redacted only as a whole value)."""
        return bool(self._whole_values) and text.strip() in self._whole_values

    @property
    def empty(self) -> bool:
        """True while the redactor knows no secret."""
        return self._pattern is None and not self._whole_values

    def redact(self, text: str, *, cut_at_end: bool = False) -> str:
        """Return ``text`` with every known secret replaced.

        With ``cut_at_end`` the text was cut short (a capped response body), so a secret may have been
        cut in two; its surviving beginning at the very end of the text is replaced as well.
        """
        return _redact(text, (self,), cut_at_end=cut_at_end)

    def __len__(self) -> int:
        return len(self._forms) + len(self._whole_values)


_WARNED_TOO_SHORT: set[str] = set()
_WARNED_LOCK = threading.Lock()


def _warn_once_too_short(secret: str) -> None:
    """One warning a process for each short secret, whichever redactors learn it (never quoting it)."""
    with _WARNED_LOCK:
        if secret in _WARNED_TOO_SHORT:
            return
        _WARNED_TOO_SHORT.add(secret)
    characters = "character" if len(secret) == 1 else "characters"
    _logger.warning(
        f"a secret of {len(secret)} {characters} is too short to redact inside text (under {MIN_REDACTED_LENGTH}); "
        "it is used, and redacted only where it is a whole value"
    )


def _cut_tail(normal_text: str, forms: tuple[str, ...]) -> int | None:
    """Where a form's beginning (at least `_MIN_CUT_PREFIX` characters) ends the text, if one does."""
    for form in forms:
        for length in range(len(form) - 1, _MIN_CUT_PREFIX - 1, -1):
            if normal_text.endswith(form[:length]):
                return len(normal_text) - length
    return None


def _redact(text: str, redactors: Iterable[Redactor], *, cut_at_end: bool = False) -> str:
    active = [redactor for redactor in redactors if not redactor.empty]
    if not active or not text:
        return text
    if any(redactor.is_whole_value(text) for redactor in active):
        return REDACTION_MARK
    normal = normalize(text)
    spans = [span for redactor in active for span in redactor.matches(normal, cut_at_end=cut_at_end)]
    return _replace_spans(text, spans)


_LIVE_REDACTORS: weakref.WeakSet[Redactor] = weakref.WeakSet()


def redact_known_secrets(text: str) -> str:
    """`text` with the secrets of every redactor alive in this process replaced (the text decoded once)."""
    return _redact(text, list(_LIVE_REDACTORS))
