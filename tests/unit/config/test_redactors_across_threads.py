"""Redactors built on some threads while others redact, as `stepwise serve`'s handler instances do."""

from __future__ import annotations

import sys
import threading

from stepwise.config.redaction import REDACTION_MARK, Redactor, redact_known_secrets

BUILDS = 100
SECRET = "sk-live-0123456789abcdef"


def test_redacting_while_other_threads_build_redactors_never_fails() -> None:
    # Given a redactor that knows a secret, and threads building more redactors all the while
    keeper = Redactor([SECRET])
    errors: list[BaseException] = []

    def build() -> None:
        try:
            for _ in range(BUILDS):
                Redactor(["another-secret-value-42"])
        except BaseException as error:
            errors.append(error)

    builders = [threading.Thread(target=build) for _ in range(3)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.00001)
    try:
        for builder in builders:
            builder.start()
        # When text is redacted meanwhile
        seen = [redact_known_secrets(f"key {SECRET}") for _ in range(BUILDS)]
    finally:
        for builder in builders:
            builder.join()
        sys.setswitchinterval(interval)
    # Then every redaction worked, and the secret was always replaced
    assert errors == []
    assert all(text == f"key {REDACTION_MARK}" for text in seen)
    assert keeper is not None


def test_a_redactor_that_learns_its_first_secret_later_is_applied_from_then_on() -> None:
    # Given a redactor built knowing no secret (as a handler's runtime is, before its configuration is read)
    late = Redactor()
    text = "key sk-late-9876543210fedcba"
    before = redact_known_secrets(text)
    # When it learns a secret
    late.add("sk-late-9876543210fedcba")
    # Then every store write and answer redacts that secret from then on
    assert (before, redact_known_secrets(text)) == (text, f"key {REDACTION_MARK}")
