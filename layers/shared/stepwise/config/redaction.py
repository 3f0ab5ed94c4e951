"""Redaction of known secret values from any text, by decoding what an echo may have done to them.

A server that echoes a credential rarely echoes it raw, and a model that restates it may spell it out: it
is percent-encoded (once or twice, every byte or only some), written as HTML entities or JSON and Python
escapes, upper-cased, in full-width letters, with zero-width joiners or spaces between its characters, as
hex bytes with colons, reversed, in rot13, base64/base32/hex-encoded (inside a Basic credential, so at any
byte alignment, or encoded twice), or only in part. Listing every such form of a secret can never be
complete, as each combination is another form. So the text is *decoded* instead (`normalize` in
`stepwise.inputs.echo_decoding`), and the forms that cannot be undone in place are listed
(`stepwise.config.secret_forms`) and searched in every stage of the decoded text. A match of a part of
the secret is followed as far as the text goes on being the secret, both ways, so the whole echoed piece
is replaced. Every match is mapped back to the span of the original text it came from, and that span is
replaced.

Time is linear in the text: the decoding is (see there), the forms are searched in one pass a stage, and
following a part costs at most the secret's length per match, each character of the text followed once.
This runs on every stored string, every log record and every API answer, so it has to be;
`bench/adversarial_inputs.py` measures it.
"""

from __future__ import annotations

import logging
import re
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stepwise.config.secret_forms import (
    MIN_REDACTED_LENGTH,
    SecretPart,
    literal_pattern,
    secret_forms,
    secret_parts,
)

if TYPE_CHECKING:
    from stepwise.inputs.echo_decoding import Normalized

__all__ = ["MIN_REDACTED_LENGTH", "REDACTION_MARK", "Redactor", "redact_known_secrets", "redact_strings"]

REDACTION_MARK = "***"

# A secret cut by a response cap: a surviving beginning this long at the very end is still replaced.
_MIN_CUT_PREFIX = 4

# The one logger of the service is built on top of this module (its log guard redacts with it), so the
# warning goes to the standard logger of the same name.
_logger = logging.getLogger("stepwise")


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


@dataclass(frozen=True)
class _Search:
    """What a redactor searches for: its forms (longest first), their pattern, and which forms are parts."""

    forms: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    parts: dict[str, list[SecretPart]] = field(default_factory=dict)

    @classmethod
    def of(cls, secrets: Iterable[str]) -> _Search:
        forms: set[str] = set()
        parts: dict[str, list[SecretPart]] = {}
        for secret in secrets:
            forms |= secret_forms(secret)
            for part, origins in secret_parts(secret).items():
                parts.setdefault(part, []).extend(origins)
        everything = forms | set(parts)
        pattern = literal_pattern(everything) if everything else None
        return cls(tuple(sorted(everything, key=len, reverse=True)), pattern, parts)

    def spans(self, text: str) -> Iterable[tuple[int, int]]:
        """Where a form is in `text` (a stage of decoded text), a part followed as far as it goes on."""
        if self.pattern is None:
            return
        position = 0
        while (match := self.pattern.search(text, position)) is not None:
            start, end = match.span()
            for origin in self.parts.get(match.group(), ()):
                followed = _followed(text, match.start(), match.end(), origin)
                start, end = min(start, followed[0]), max(end, followed[1])
            yield start, end
            position = end


def _followed(text: str, start: int, end: int, origin: SecretPart) -> tuple[int, int]:
    """The span around [start, end), a part of `origin`'s secret, for as long as `text` goes on being it."""
    secret, before, after = origin.secret, origin.offset, origin.offset + end - start
    while start > 0 and before > 0 and text[start - 1] == secret[before - 1]:
        start, before = start - 1, before - 1
    while end < len(text) and after < len(secret) and text[end] == secret[after]:
        end, after = end + 1, after + 1
    return start, end


class Redactor:
    """Replaces every known secret value with ``***`` in any text, whatever an echo did to it.

    Thread-safe: tools may run side by side. Every redactor alive is also applied by
    `redact_known_secrets`, which the log guard, the store and the API answers use as the last line of
    defence.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._secrets: frozenset[str] = frozenset()
        self._search = _Search()
        self._whole_values: frozenset[str] = frozenset()
        for secret in secrets:
            self.add(secret)

    def add(self, secret: str) -> None:
        """Remember a secret value so that `redact` scrubs it from now on.

        A value under `MIN_REDACTED_LENGTH` characters (a local model server's `ollama` or `x`) is accepted
        with a warning, and replaced only where it is a whole value: inside text, replacing it would mangle
        the text around it.
        """
        if not secret:
            return
        # Counted among the live redactors before the lock is let go: a thread whose `add` of the same secret
        # returns once it can take the lock finds it redacted everywhere.
        if len(secret) < MIN_REDACTED_LENGTH:
            with self._lock:
                self._whole_values |= {secret}
                _know(self)
            _warn_once_too_short(secret)
            return
        with self._lock:
            if secret in self._secrets:
                return
            secrets = self._secrets | {secret}
            # the search first: `known` (which `_redact` tells redactors apart by) never names a secret it misses
            self._search = _Search.of(secrets)
            self._secrets = secrets
            _know(self)

    def matches(self, normal: Normalized, *, cut_at_end: bool = False) -> list[tuple[int, int]]:
        """The spans of the original text where a known secret was found in its normal form."""
        search = self._search
        spans = [
            normal.original_span(start, end, stage)
            for stage, text in enumerate(normal.stages)
            for start, end in search.spans(text)
        ]
        if cut_at_end and search.forms:
            for stage in {0, len(normal.stages) - 1}:
                tail = _cut_tail(normal.stages[stage], search.forms)
                if tail is not None:
                    spans.append(normal.original_span(tail, len(normal.stages[stage]), stage))
        return spans

    def is_whole_value(self, text: str) -> bool:
        """True when `text`, stripped, is one of the short secrets (redacted only as a whole value)."""
        return bool(self._whole_values) and text.strip() in self._whole_values

    @property
    def empty(self) -> bool:
        """True while the redactor knows no secret."""
        return not self._secrets and not self._whole_values

    @property
    def known(self) -> frozenset[str]:
        """Every secret this redactor knows: two that know the same ones redact alike."""
        return self._secrets | self._whole_values

    def redact(self, text: str, *, cut_at_end: bool = False) -> str:
        """Return ``text`` with every known secret replaced.

        With ``cut_at_end`` the text was cut short (a capped response body), so a secret may have been
        cut in two; its surviving beginning at the very end of the text is replaced as well.
        """
        return _redact(text, (self,), cut_at_end=cut_at_end)

    def __len__(self) -> int:
        return len(self._search.forms) + len(self._whole_values)


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
    # Each process builds its runtime's redactors from the same configuration; one of each kind is enough.
    active = list({redactor.known: redactor for redactor in redactors if not redactor.empty}.values())
    if not active or not text:
        return text
    if any(redactor.is_whole_value(text) for redactor in active):
        return REDACTION_MARK
    # loaded here, with the first secret known: a process that never learns one (most handlers' first
    # calls) never imports the decoder
    from stepwise.inputs.echo_decoding import normalize

    normal = normalize(text)
    spans = [span for redactor in active for span in redactor.matches(normal, cut_at_end=cut_at_end)]
    return _replace_spans(text, spans)


# The redactors alive that know a secret (one joins when it learns its first; none forgets). Most redactors of
# a process never learn one, and the store redacts every string it writes: going through them all, each time,
# was 3% of a `stepwise serve` burst's CPU.
_LIVE_REDACTORS: weakref.WeakSet[Redactor] = weakref.WeakSet()
# `stepwise serve` builds redactors (a handler instance starting) while other threads redact: a WeakSet read
# while another thread adds to it raises "Set changed size during iteration"
_LIVE_LOCK = threading.Lock()


def _know(redactor: Redactor) -> None:
    """Count `redactor`, which now knows a secret, among those `redact_known_secrets` applies."""
    with _LIVE_LOCK:
        _LIVE_REDACTORS.add(redactor)


def redact_known_secrets(text: str) -> str:
    """`text` with the secrets of every redactor alive in this process replaced (the text decoded once)."""
    with _LIVE_LOCK:
        if not _LIVE_REDACTORS:
            return text
        live = list(_LIVE_REDACTORS)
    return _redact(text, live)


def redact_strings(value: Any) -> Any:
    """`value` (JSON-like: dicts, lists, strings) with `redact_known_secrets` applied to every string, keys
    included; the very same object when nothing was replaced, so a caller can tell and keep its own form."""
    if isinstance(value, str):
        return redact_known_secrets(value)
    if isinstance(value, dict):
        items = [(redact_strings(key), redact_strings(item)) for key, item in value.items()]
        changed = any(
            new_key is not key or new_item is not item
            for (new_key, new_item), (key, item) in zip(items, value.items(), strict=True)
        )
        return dict(items) if changed else value
    if isinstance(value, list | tuple):
        redacted = [redact_strings(item) for item in value]
        changed = any(new is not old for new, old in zip(redacted, value, strict=True))
        return type(value)(redacted) if changed else value
    return value
