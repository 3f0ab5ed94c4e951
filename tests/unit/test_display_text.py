"""Text shown to a person: invisible, bidi and control characters escaped, everything else as it is; and the
CLI's trace lines built with it."""

from __future__ import annotations

import json

from stepwise.inputs.display_text import arguments_display, visible
from stepwise.local.trace_printer import describe_step
from stepwise.models.approval import ApprovalNote, arguments_sha256
from stepwise.models.step_record import StepRecord

# One of each category escaped: a bidi override and its pop (Cf), a zero-width space (Cf), a line
# separator (Zl), a paragraph separator (Zp), a carriage return, an escape and a C1 control (Cc), and a tag
# character past the BMP (Cf).
HIDDEN = "\u202e\u202c\u200b\u2028\u2029\r\x1b\x85\U000e0041"


def test_each_invisible_or_control_character_is_written_as_its_escape() -> None:
    # When text holding one of each is made visible
    shown = visible(f"a{HIDDEN}b")
    # Then each is its JSON escape (two surrogates past the BMP), and nothing invisible is left
    assert shown == "a\\u202e\\u202c\\u200b\\u2028\\u2029\\u000d\\u001b\\u0085\\udb40\\udc41b"
    assert shown.isascii()


def test_layout_and_ordinary_text_of_any_script_is_left_as_it_is() -> None:
    # Given lines, tabs, accents, CJK, an emoji and a right-to-left script
    text = "ligne 1\n\tcafé 中文 🙂 שלום"
    # When it is made visible / Then nothing changes
    assert visible(text) == text


def test_arguments_are_shown_as_json_that_parses_back_to_the_same_arguments() -> None:
    # Given arguments whose `to` is shown reversed by a bidi override
    arguments = {"to": "acct-1234\u202e0009\u202c", "memo": f"x{HIDDEN}"}
    # When they are shown
    shown = arguments_display(arguments)
    # Then the override is a visible escape, and the text is JSON of the very same arguments
    assert '"to": "acct-1234\\u202e0009\\u202c"' in shown
    assert shown.isascii() and json.loads(shown) == arguments


def test_the_arguments_hash_is_of_their_canonical_json_whatever_the_key_order() -> None:
    # Given the same arguments in two key orders
    first, second = {"to": "bob", "amount": 5}, {"amount": 5, "to": "bob"}
    # Then both hash alike, as SHA-256 of sorted compact UTF-8 JSON
    import hashlib

    expected = hashlib.sha256(b'{"amount":5,"to":"bob"}').hexdigest()
    assert arguments_sha256(first) == arguments_sha256(second) == expected


def test_the_clis_trace_shows_arguments_observations_and_the_approval_escaped() -> None:
    # Given a decision calling `transfer` with an override in its arguments, and the call's tool step,
    # approved with a reason, whose observation holds a carriage return
    arguments = {"to": "acct-1234\u202e0009"}
    decision = StepRecord(iteration=1, kind="parse", calls=[{"id": "c1", "name": "transfer", "arguments": arguments}])
    note = ApprovalNote(
        status="approved",
        answered_by="alice",
        answered_at="2026-11-27T10:00:00Z",
        reason="ok\u202e",
        arguments_sha256="0" * 64,
    )
    tool = StepRecord(iteration=1, kind="tool", n=0, action="transfer", observation="sent\rOK", ok=True, approval=note)
    # When their lines are built
    lines = describe_step(decision) + describe_step(tool)
    # Then no line holds an invisible character, and the approval says who, when and why
    assert all(line.isascii() for line in lines), lines
    assert lines[0].endswith('transfer {"to": "acct-1234\\u202e0009"}')
    assert lines[1] == "[1] approval  approved by alice at 2026-11-27T10:00:00Z: ok\\u202e"
    assert lines[2].endswith("sent\\u000dOK")
