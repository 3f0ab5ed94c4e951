"""The corpus of real completions is read as its source frameworks read it, on every protocol."""

from __future__ import annotations

import pytest

from tests.corpus.rates import PROTOCOLS, pass_rate, run_intent, run_protocol

MINIMUM_RATE = 0.97


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_corpus_pass_rate_of_each_protocol_is_at_least_97_percent(protocol: str) -> None:
    # Given the protocol's real completions / When each is parsed
    results = run_protocol(protocol)
    # Then at least 97% are read as their source reads them
    failed = [f"{result.name}: {result.got}" for result in results if not result.passed]
    assert pass_rate(results) >= MINIMUM_RATE, failed


def test_the_corpus_pass_rate_of_intent_replies_is_at_least_97_percent() -> None:
    # Given real intent replies / When each is read
    results = run_intent()
    # Then at least 97% give the options (and NotFound categories) expected
    failed = [f"{result.name}: {result.got}" for result in results if not result.passed]
    assert pass_rate(results) >= MINIMUM_RATE, failed
