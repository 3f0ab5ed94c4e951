"""What a trace keeps of an observation: a preview that says when it was cut, and the observation's size."""

from __future__ import annotations

from stepwise.tools import ToolInvoker, ToolRegistry, tool
from stepwise.tools.observation import (
    PREVIEW_CHARS,
    PREVIEW_MARKER,
    carried_chars,
    preview_text,
    truncate_text,
    utf8_bytes,
)
from tests.unit.tools.config_builders import call

MILLION = 1_000_000


@tool
def flood(size: int) -> str:
    """Answer `size` characters.

    Args:
        size: How many.
    """
    return "x" * size


def test_a_short_observation_is_its_own_preview() -> None:
    # Given an observation shorter than a preview, when it is previewed, then it is whole, with no marker
    assert preview_text("sunny, 21 °C") == "sunny, 21 °C"


def test_a_long_observation_is_previewed_by_its_start_and_a_marker() -> None:
    # Given a 1,000,000-character observation, when it is previewed
    preview = preview_text("y" * MILLION)
    # Then it keeps its first characters and ends with the marker, so it never passes for the whole
    assert preview == "y" * PREVIEW_CHARS + PREVIEW_MARKER


def test_the_size_in_bytes_counts_each_character_as_utf8_does() -> None:
    # Given ASCII, a 2-byte, a 3-byte and a 4-byte character, then their bytes are counted as stored
    assert utf8_bytes("aé€😀") == 1 + 2 + 3 + 4


def test_a_result_cut_to_the_profiles_cap_says_how_long_the_tool_answered() -> None:
    # Given a tool answering 1,000,000 characters under a 200,000-character cap
    invoker = ToolInvoker(ToolRegistry([flood]), max_observation_chars=200_000)
    # When it is called
    observation = invoker.invoke(call("flood", size=MILLION))
    # Then the model receives 200,000 characters, and the observation keeps the length of the tool's answer
    assert (len(observation.content), observation.truncated, observation.output_chars) == (200_000, True, MILLION)


def test_a_result_within_the_cap_has_no_answer_length_of_its_own() -> None:
    # Given a tool answering within the cap, when it is called, then nothing was cut and no other length is kept
    observation = ToolInvoker(ToolRegistry([flood]), max_observation_chars=200_000).invoke(call("flood", size=10))
    assert (observation.content, observation.truncated, observation.output_chars) == ("x" * 10, False, None)


def test_a_cut_text_carries_its_length_without_the_marker() -> None:
    # Given a 1,000,000-character text cut to 5,000 characters, and a text short enough to stay whole
    cut, _ = truncate_text("z" * MILLION, 5_000)
    whole, _ = truncate_text("z" * 10, 5_000)
    # When the characters each carries of its text are counted, then the marker is not one of them
    assert (carried_chars(cut), carried_chars(whole)) == (cut.count("z"), 10)
