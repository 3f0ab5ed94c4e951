"""The table of overflow wording families: each family's examples are recognised as overflows by the family's own
words, and every pattern of the family that places the window or the prompt's size reads one of them, the same
number the table's resolvers give (a wording recognised but not read, or read but not recognised, fails here)."""

from __future__ import annotations

import pytest

from stepwise.llm.provider_errors import is_context_overflow
from stepwise.overflow_wording import FAMILIES, OverflowFamily, read_number, reported_prompt, stated_window


@pytest.mark.parametrize("family", FAMILIES, ids=[family.recognised.split("|")[0] for family in FAMILIES])
def test_every_example_of_a_family_is_recognised_by_it_and_read_by_its_patterns(family: OverflowFamily) -> None:
    # Given a family of the table and its real refusals
    for example in family.examples:
        # When an example is read / Then the family's own words recognise it, and it is an overflow
        assert family.recognition.search(example), example
        assert is_context_overflow(example), example
        # and what the family reads in it is what the resolvers read (no other family reads another number first)
        windows = [read_number(wording, example) for wording in family.window_wordings]
        prompts = [read_number(wording, example) for wording in family.prompt_wordings]
        assert stated_window(example) == next((n for n in windows if n is not None), None), example
        assert reported_prompt(example) == next((n for n in prompts if n is not None), None), example
    # Then every pattern placing the window or the prompt's size reads a number from one of the examples
    for wording in (*family.window_wordings, *family.prompt_wordings):
        assert any(read_number(wording, example) is not None for example in family.examples), wording.pattern
