"""The text a run listing's `q` matches: every word, in any case and any Unicode form of it."""

from __future__ import annotations

import pytest

from stepwise.store.run_filters import RunFilter

STORED = {"question": "Wetter in Zürich: café an der Straße?", "answer": "\uff33\uff4f\uff4e\uff4e\uff49\uff47, 20 °C."}


@pytest.mark.parametrize(
    "words",
    ["cafe\u0301", "zu\u0308rich STRASSE", "ZÜRICH café", "sonnig", "\uff33\uff2f\uff2e\uff2e\uff29\uff27"],
    ids=["decomposed", "decomposed-and-folded", "composed-upper", "full-width-stored", "full-width-asked"],
)
def test_a_word_in_another_unicode_form_or_case_finds_the_run(words: str) -> None:
    # Given a run whose question and answer are stored composed (and partly full-width)
    # When it is searched for the same words typed in another form or case, then it matches
    assert RunFilter(text=words).matches_meta(STORED)


def test_a_word_the_run_does_not_hold_still_misses_it() -> None:
    # Given the same run, when a word it lacks is asked beside one it holds, then it does not match
    assert not RunFilter(text="café berlin").matches_meta(STORED)
