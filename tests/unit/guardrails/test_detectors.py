"""The local PII detectors: what each finds, and the checksums that keep look-alikes out."""

from __future__ import annotations

from stepwise.guardrails.detectors import iban_valid, luhn_valid, redact_pii


def test_a_card_number_passing_luhn_is_replaced_whatever_its_separators() -> None:
    # Given a text with a test Visa number written three ways
    text = "4111 1111 1111 1111, 4111-1111-1111-1111 and 4111111111111111."
    # When cards are redacted
    redacted, counts = redact_pii(text, ["card"])
    # Then each is the typed marker
    assert redacted == "[card], [card] and [card]."
    assert counts == {"card": 3}


def test_a_digit_run_failing_luhn_is_not_a_card() -> None:
    # Given 16 digits whose check digit is wrong, and an order number
    text = "order 4111 1111 1111 1112, ref 1234567890123"
    # Then nothing is redacted
    assert redact_pii(text, ["card"]) == (text, {})
    assert luhn_valid("79927398713") and not luhn_valid("79927398710")


def test_an_iban_is_found_by_its_mod_97_checksum_even_spaced_before_another_word() -> None:
    # Given a spaced German IBAN followed by an upper-case word, and a compact British one
    text = "pay DE89 3704 0044 0532 0130 00 NOW or GB82WEST12345698765432; not DE00 3704 0044 0532 0130 00"
    # When IBANs are redacted
    redacted, counts = redact_pii(text, ["iban"])
    # Then both valid ones are replaced, the word kept, and the one with a wrong check digit left
    assert redacted == "pay [iban] NOW or [iban]; not DE00 3704 0044 0532 0130 00"
    assert counts == {"iban": 2}
    assert not iban_valid("GB82WEST12345698765433")


def test_emails_phones_and_aws_keys_are_replaced_but_dates_are_not() -> None:
    # Given one of each, and a timestamp (a digit run as long as a phone number)
    text = "mail jo.doe+x@example.co.uk, call +33 1 23 45 67 89 at 2026-11-27 13:14:00, key AKIAIOSFODNN7EXAMPLE"
    # When they are redacted
    redacted, counts = redact_pii(text, ["email", "phone", "aws_key"])
    # Then each value is its marker and the date stays
    assert redacted == "mail [email], call [phone] at 2026-11-27 13:14:00, key [aws_key]"
    assert counts == {"aws_key": 1, "email": 1, "phone": 1}


def test_only_the_listed_kinds_are_redacted() -> None:
    # Given a card and an email, with only emails asked for
    redacted, counts = redact_pii("4111111111111111 to a@b.io", ["email"])
    # Then the card stays
    assert redacted == "4111111111111111 to [email]"
    assert counts == {"email": 1}
