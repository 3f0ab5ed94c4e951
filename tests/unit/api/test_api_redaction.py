"""The API's answers hold no secret a redactor of the process knows, whatever was stored."""

from __future__ import annotations

import json
from typing import Any

from stepwise.config.redaction import Redactor
from stepwise.steps.api.redacted_answers import redacted_answer

SECRET = "sk-live-Pq8Xv3Nz6Wr1Ty4Mb7"


def answer(body: str, content_type: str = "application/json") -> dict[str, Any]:
    """A proxy result as Powertools builds it (REST API: multi-value headers)."""
    return {"statusCode": 200, "multiValueHeaders": {"Content-Type": [content_type]}, "body": body}


def test_a_stored_secret_is_redacted_from_each_string_of_a_json_answer() -> None:
    # Given a process that knows the secret, and an answer whose strings hold it raw, spaced out and JSON-escaped
    redactor = Redactor([SECRET])
    view = {"answer": f"key {SECRET}", "trace": [{"thought": " ".join(SECRET)}, {"note": SECRET.upper()}], "n": 2}
    body = json.dumps(view, ensure_ascii=False).replace("-", "\\u002d")

    # When the answer is given
    given = redacted_answer(answer(body))

    # Then its body is still the same JSON, with every form of the secret replaced in its strings
    assert json.loads(given["body"]) == {"answer": "key ***", "trace": [{"thought": "***"}, {"note": "***"}], "n": 2}
    assert redactor.redact(given["body"]) == given["body"]


def test_an_answer_without_a_secret_is_given_as_it_was() -> None:
    # Given a process that knows the secret, and answers that do not hold it (JSON, and a page of the console)
    known = Redactor([SECRET])
    plain = answer('{"status":"SUCCEEDED"}')
    page = answer(f"<p>{SECRET}</p>", content_type="text/html")

    # When they are given, then they are the very same answers (a page is a file of the console, not data)
    assert (redacted_answer(plain) is plain, redacted_answer(page) is page, len(known) > 0) == (True, True, True)
