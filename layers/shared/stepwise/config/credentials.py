"""Secret references in configuration, their resolution, and redaction of resolved values.

A configuration value that holds a credential is one of:

- a literal (``"abc123"``), used as it is;
- ``ssm:/path/to/parameter`` — an SSM Parameter Store parameter, decrypted;
- ``secretsmanager:name`` or ``secretsmanager:name#json-key`` — a Secrets Manager secret, or one key of a
  secret whose value is a JSON object.

`SecretResolver` fetches references through Powertools parameter providers, which cache each value for
``max_age_seconds`` so a rotated secret is picked up without a redeploy. Every value it hands out is
remembered by its `Redactor`, which scrubs those values, in every common encoding, from any text before
that text reaches a model, the store or a log; `redact_known_secrets` applies every live redactor, for the
log guard (`stepwise.telemetry.log_guard`) and the store codec. Error messages here name the reference, never the
value.
"""

from __future__ import annotations

import base64
import html
import json
import re
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import quote, quote_plus

from stepwise.errors import ConfigError

SSM_PREFIX = "ssm:"
SECRETS_MANAGER_PREFIX = "secretsmanager:"
REDACTION_MARK = "***"

# Replacing values this short would mangle ordinary text (every "1" or "abc123") while protecting little: a
# credential that short is guessable anyway. Secrets under it are refused when they are loaded.
MIN_REDACTED_LENGTH = 8

# A secret cut by a response cap: a surviving beginning this long at the very end is still replaced.
_MIN_CUT_PREFIX = 4

SecretSource = Literal["literal", "ssm", "secretsmanager"]


class SecretUnavailable(ConfigError):
    """A secret reference could not be resolved; the message names the reference, never a value."""


class ParameterProvider(Protocol):
    """What the resolver needs of a Powertools provider (`SSMProvider`, `SecretsProvider`)."""

    def get(self, name: str, max_age: int | None = None, **kwargs: Any) -> str | bytes | dict[str, Any] | None:
        """Fetch one value, from the provider's cache when it is younger than ``max_age`` seconds."""
        ...


@dataclass(frozen=True)
class SecretReference:
    """A parsed configuration value: where the secret lives, its name there, and an optional JSON key."""

    source: SecretSource
    name: str
    json_key: str | None = None

    @classmethod
    def parse(cls, value: str) -> SecretReference:
        """Read a configuration value; anything without a known prefix is a literal."""
        if value.startswith(SSM_PREFIX):
            name = value.removeprefix(SSM_PREFIX)
            if not name:
                raise ConfigError("secret reference 'ssm:' names no parameter")
            return cls("ssm", name)
        if value.startswith(SECRETS_MANAGER_PREFIX):
            name, _, json_key = value.removeprefix(SECRETS_MANAGER_PREFIX).partition("#")
            if not name:
                raise ConfigError(f"secret reference {value!r} names no secret")
            return cls("secretsmanager", name, json_key or None)
        return cls("literal", value)

    def describe(self) -> str:
        """The reference as written in configuration; safe to show, it holds no secret."""
        if self.source == "ssm":
            return f"{SSM_PREFIX}{self.name}"
        if self.source == "secretsmanager":
            suffix = f"#{self.json_key}" if self.json_key else ""
            return f"{SECRETS_MANAGER_PREFIX}{self.name}{suffix}"
        return "a literal value"


class SecretTooShort(SecretUnavailable):
    """A secret too short to be redacted without mangling ordinary text; the message never holds it."""


class Redactor:
    """Replaces every known secret value with ``***`` in any text, in the forms it travels in.

    A server that echoes a credential back rarely echoes it raw: it is percent-encoded (in either case,
    with ``+`` or ``%20`` for a space) when it was a query parameter, JSON- or HTML-escaped in a body,
    base64 or base64url inside a Basic credential or a token (at any of the three byte alignments, so
    ``base64(user:secret)`` is caught too), or hex. `secret_forms` lists them all. Thread-safe: tools
    may run side by side. Every redactor alive is also applied by `redact_known_secrets`, which the log
    guard and the store use as the last line of defence.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._variants: tuple[str, ...] = ()
        self._pattern: re.Pattern[str] | None = None
        for secret in secrets:
            self.add(secret)
        _LIVE_REDACTORS.add(self)

    def add(self, secret: str) -> None:
        """Remember a secret value so that `redact` scrubs it from now on.

        Raises `SecretTooShort` for a value under `MIN_REDACTED_LENGTH` characters: redacting it would
        mangle ordinary text, and not redacting it would leak it.
        """
        if len(secret) < MIN_REDACTED_LENGTH:
            raise SecretTooShort(
                f"a secret of {len(secret)} characters is too short to redact safely; "
                f"use one of at least {MIN_REDACTED_LENGTH}"
            )
        forms = secret_forms(secret)
        with self._lock:
            # Longest first, so a secret that contains another is replaced whole.
            self._variants = tuple(sorted(set(self._variants) | forms, key=len, reverse=True))
            self._pattern = re.compile("|".join(_variant_pattern(variant) for variant in self._variants))

    def redact(self, text: str, *, cut_at_end: bool = False) -> str:
        """Return ``text`` with every known secret replaced.

        With ``cut_at_end`` the text was cut short (a capped response body), so a secret may have been
        cut in two; its surviving beginning at the very end of the text is replaced as well.
        """
        pattern = self._pattern
        if pattern is None:
            return text
        text = pattern.sub(REDACTION_MARK, text)
        if cut_at_end:
            text = _redact_cut_tail(text, self._variants)
        return text

    def __len__(self) -> int:
        return len(self._variants)


def check_redactable_literal(value: str) -> str:
    """`value` unless it is a literal secret too short to redact safely (`ValueError`, never quoting it).

    References (`ssm:`, `secretsmanager:`) are checked when they are resolved; an empty value means none.
    """
    if value and SecretReference.parse(value).source == "literal" and len(value) < MIN_REDACTED_LENGTH:
        raise ValueError(
            f"a literal secret of {len(value)} characters is too short to redact safely; "
            f"use one of at least {MIN_REDACTED_LENGTH}"
        )
    return value


def secret_forms(secret: str) -> set[str]:
    """The forms of `secret` a server or a library is likely to write, each long enough to redact safely."""
    data = secret.encode("utf-8")
    forms = {
        secret,
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
        quote(secret, safe="").replace("%20", "+"),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(secret)[1:-1].replace("/", "\\/"),
        html.escape(secret),
        html.escape(secret, quote=False),
        html.escape(secret).replace("&#x27;", "&#39;"),
        data.hex(),
    }
    for offset in range(3):
        # The characters that encode only the secret's bits, whatever bytes come before and after it.
        encoded = base64.b64encode(b"\0" * offset + data).decode("ascii")
        middle = encoded[-(-8 * offset // 6) : 8 * (offset + len(data)) // 6]
        forms.update({middle, middle.replace("+", "-").replace("/", "_")})
    return {form for form in forms if len(form) >= MIN_REDACTED_LENGTH}


_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_HEX_FORM = re.compile(r"[0-9a-f]+")


def _variant_pattern(variant: str) -> str:
    """A regular expression matching `variant`, with percent escapes and hex digits in either case."""
    if _HEX_FORM.fullmatch(variant):
        return "".join(f"[{char}{char.upper()}]" if char.isalpha() else char for char in variant)
    parts: list[str] = []
    position = 0
    for escape in _PERCENT_ESCAPE.finditer(variant):
        parts.append(re.escape(variant[position : escape.start()]))
        parts.append("%" + "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in escape.group()[1:]))
        position = escape.end()
    parts.append(re.escape(variant[position:]))
    return "".join(parts)


_LIVE_REDACTORS: weakref.WeakSet[Redactor] = weakref.WeakSet()


def redact_known_secrets(text: str) -> str:
    """`text` with the secrets of every redactor alive in this process replaced."""
    for redactor in list(_LIVE_REDACTORS):
        text = redactor.redact(text)
    return text


def _redact_cut_tail(text: str, variants: tuple[str, ...]) -> str:
    for variant in variants:
        for length in range(len(variant) - 1, _MIN_CUT_PREFIX - 1, -1):
            if text.endswith(variant[:length]):
                return text[:-length] + REDACTION_MARK
    return text


class SecretResolver:
    """Resolves literal, ``ssm:`` and ``secretsmanager:`` values and remembers what it resolved.

    Providers are created with boto3 on first use when not injected, so configurations that hold only
    literals never touch AWS. Powertools caches each fetched value for ``max_age_seconds``.
    """

    def __init__(
        self,
        ssm_provider: ParameterProvider | None = None,
        secrets_provider: ParameterProvider | None = None,
        max_age_seconds: int = 300,
        redactor: Redactor | None = None,
    ) -> None:
        if max_age_seconds < 0:
            raise ValueError("max_age_seconds must be zero or more")
        self._ssm_provider = ssm_provider
        self._secrets_provider = secrets_provider
        self._max_age_seconds = max_age_seconds
        self._lock = threading.Lock()
        self.redactor = redactor if redactor is not None else Redactor()

    def resolve(self, value: str) -> str:
        """Return the secret a configuration value stands for, and remember it for redaction.

        Raises `SecretUnavailable` (naming the reference, not the value) when it cannot be fetched.
        """
        reference = SecretReference.parse(value)
        if reference.source == "ssm":
            secret = self._fetch(self._ssm(), reference, decrypt=True)
        elif reference.source == "secretsmanager":
            secret = self._fetch(self._secrets(), reference)
            if reference.json_key is not None:
                secret = _json_field(secret, reference)
        else:
            secret = reference.name
        try:
            self.redactor.add(secret)
        except SecretTooShort as exc:
            raise SecretTooShort(f"secret {reference.describe()}: {exc}") from None
        return secret

    def _fetch(self, provider: ParameterProvider, reference: SecretReference, **options: Any) -> str:
        try:
            fetched = provider.get(reference.name, max_age=self._max_age_seconds, **options)
        except Exception as exc:
            # Powertools and botocore messages name the parameter, never its value.
            raise SecretUnavailable(
                f"secret {reference.describe()} could not be resolved: {type(exc).__name__}: {exc}"
            ) from None
        if isinstance(fetched, bytes):
            try:
                fetched = fetched.decode("utf-8")
            except UnicodeDecodeError:
                raise SecretUnavailable(f"secret {reference.describe()} is binary, not text") from None
        if not isinstance(fetched, str) or not fetched:
            raise SecretUnavailable(f"secret {reference.describe()} is empty or not a string")
        return fetched

    def _ssm(self) -> ParameterProvider:
        with self._lock:
            if self._ssm_provider is None:
                from aws_lambda_powertools.utilities.parameters import SSMProvider

                self._ssm_provider = SSMProvider()
            return self._ssm_provider

    def _secrets(self) -> ParameterProvider:
        with self._lock:
            if self._secrets_provider is None:
                from aws_lambda_powertools.utilities.parameters import SecretsProvider

                self._secrets_provider = SecretsProvider()
            return self._secrets_provider


def _json_field(secret: str, reference: SecretReference) -> str:
    try:
        document = json.loads(secret)
    except ValueError:
        # `from None`: the decoding error carries the document, which is the secret.
        raise SecretUnavailable(f"secret {reference.describe()} is not a JSON object") from None
    if not isinstance(document, dict):
        raise SecretUnavailable(f"secret {reference.describe()} is not a JSON object")
    field = document.get(reference.json_key)
    if isinstance(field, bool) or not isinstance(field, str | int | float) or field == "":
        raise SecretUnavailable(f"secret {reference.describe()} has no text value at that key")
    return str(field)
