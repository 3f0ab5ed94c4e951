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


PAIRS = 8
ADDS = 40


def test_a_secret_another_redactor_is_learning_stays_redacted_meanwhile() -> None:
    # Given pairs of redactors alive (two handlers' runtimes of one configuration), one knowing both of its
    # secrets and the other learning the second now, on another thread; made in both orders
    leaks: list[str] = []
    alive: list[Redactor] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for pair in range(PAIRS):
            known, late = f"sk-known-{pair}-0123456789abcdef", f"sk-late-{pair}-fedcba9876543210"
            if pair % 2:
                whole, learning = Redactor([known, late]), Redactor([known])
            else:
                learning, whole = Redactor([known]), Redactor([known, late])
            alive += [whole, learning]
            adding = threading.Thread(target=learning.add, args=(late,))
            adding.start()
            # When text holding that secret is redacted while it learns it
            while adding.is_alive():
                redacted = redact_known_secrets(f"key {late}")
                if late in redacted:
                    leaks.append(redacted)
            adding.join()
    finally:
        sys.setswitchinterval(interval)
    # Then the secret was always replaced: the redactor that knew it was applied
    assert leaks == []
    assert len(alive) == 2 * PAIRS


def test_once_an_add_of_a_secret_returns_it_is_redacted_everywhere_whichever_thread_added_it() -> None:
    # Given threads redacting all the while (holding the live redactors' lock often), and new redactors
    readers_stop = threading.Event()

    def read() -> None:
        while not readers_stop.is_set():
            redact_known_secrets("")

    readers = [threading.Thread(target=read) for _ in range(2)]
    leaks: list[str] = []
    alive: list[Redactor] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for reader in readers:
            reader.start()
        for attempt in range(ADDS):
            redactor, secret = Redactor(), f"s{attempt:07d}"
            alive.append(redactor)
            start = threading.Barrier(3)

            # When three threads add the same secret at once (three resolutions of one reference), each then
            # redacting text that holds it
            def add_then_redact(
                redactor: Redactor = redactor, secret: str = secret, start: threading.Barrier = start
            ) -> None:
                start.wait()
                redactor.add(secret)
                redacted = redact_known_secrets(f"{secret} echoed")
                if secret in redacted:
                    leaks.append(redacted)

            adders = [threading.Thread(target=add_then_redact) for _ in range(3)]
            for adder in adders:
                adder.start()
            for adder in adders:
                adder.join()
    finally:
        readers_stop.set()
        for reader in readers:
            reader.join()
        sys.setswitchinterval(interval)
    # Then each thread found it redacted once its add returned
    assert leaks == []
    assert len(alive) == ADDS
