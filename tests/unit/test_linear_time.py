"""Every regular expression and loop that reads caller, model or tool text takes time linear in the text.

The cases are `bench.adversarial_cases.CASES`: each function on untrusted text, with the inputs worst
for it (unterminated strings full of escapes, runs of the characters a pattern repeats, unclosed tags
and brackets, near-matches and parts of a secret, full-width and spaced-out characters). A case fails
when its 1 MB input costs more than `MAX_RATIO` times its 100 KB one, more than `MAX_SCANS` plain scans
of the text, and a 4 MB input more than `MAX_GROWTH_4X` times the 1 MB one: a function that rescans its
text grows 100 and 16 times. Ratios measured within one run, never seconds (`bench/adversarial_inputs.py`
says why three).

The functions covered (one line per case in the table `make bench` prints):
json_limits.nesting_depth and load_json, text_policy.clean_text and find_unencodable,
echo_decoding.normalize, Redactor.redact, redact_known_secrets, lenient_json.load_lenient,
find_objects, strip_code_fence and close_cut_off, react_json.action_blocks and parse_react_json,
react_text.parse_react_text and read_input_text, xml_tags.parse_xml, markers.parse_markers (and
sections.find_sections under both), call_syntax.parse_call, keywords.find_keywords and clean_thought,
arguments.decode_arguments and clean_tool_name, provider_responses.completion_from_response,
parse.detect_protocol, shapes.has_action_key and is_plain_prose, think_blocks.split_reasoning,
turn_tokens.without_end_of_turn,
text_tool_calls.tool_calls_in_text (and, alone, tool_call_markup.inline_function_calls and tagged_calls,
tool_call_tokens.gemma4_calls, tool_call_lines.recipient_calls, call_line_calls and nested_call), the intent
answer's reading (intent.parsing) and
option_search.find_option, search_text, without_ruled_out and labelled_answers,
http_response.describe_body, openapi.names.model_safe_name, search_words.words and implied_verb
(find_tools' reading of descriptions and queries), structured_output.read_json (a structured-output
reply), a provider's refusal (overflow_wording.is_overflow_text, stated_window and reported_prompt), the
summarizer's notes (summarizer.read_notes, summary_text.attributed_facts), a configuration's `${env:...}`
references, the chat answer's stream pieces, and the patterns others write (deny, intent and eval patterns,
scripted scenarios, tool and answer schemas: `bench/foreign_patterns.py`).
"""

from __future__ import annotations

import pytest

from bench.adversarial_cases import CASES, Case
from bench.adversarial_inputs import MAX_GROWTH_4X, MAX_RATIO, MAX_SCANS, Growth, growth

# A machine shared with other work can slow one measurement down; a function that rescans fails every time.
MEASUREMENTS = 3


@pytest.mark.parametrize("case", CASES, ids=[f"{case.function}: {case.input}" for case in CASES])
def test_the_cost_of_an_adversarial_input_grows_linearly_with_its_size(case: Case) -> None:
    # Given a function on untrusted text and the input worst for it, at 100 KB, 1 MB (and 2 MB if needed)
    # When each size is timed (best of a few runs), up to three times while it looks super-linear
    measured: list[Growth] = []
    while len(measured) < MEASUREMENTS and not any(each.linear or each.conclusive for each in measured):
        measured.append(growth(case))
    # Then 1 MB costs at most MAX_RATIO times 100 KB (or at most MAX_SCANS plain scans of the text, or, above
    # the CPU caches, 4 MB at most MAX_GROWTH_4X times 1 MB)
    assert any(each.linear for each in measured), (
        f"{case.function} on {case.input}: limits {MAX_RATIO} (1 MB / 100 KB), {MAX_SCANS} (scans), "
        f"{MAX_GROWTH_4X} (4 MB / 1 MB); measured {measured}"
    )
