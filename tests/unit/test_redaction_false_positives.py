"""Redaction replaces nothing in ordinary text: keys of the shapes providers issue, over the real text of the tests.

The texts are the real completions corpus (`tests/corpus/cases`: every string of every case, replies models
wrote and framework test inputs), the documents under `tests/fixtures` (Higress configurations and READMEs
in English and Chinese, eval suites, provider error bodies, Step Functions events) and every string of
Discord's published OpenAPI description (prose, examples, ids; the test's largest part). Every decoding the
redactor does runs over them (escapes, NFKC, separators between characters), and every form it searches
(encodings, reversal, rot13, the keys' distinctive parts); not one character may be replaced.
`python -m tests.unit.test_redaction_false_positives` prints the figures, over the four real OpenAPI
descriptions of `tests/fixtures/openapi/real` (20 MB; GitHub's alone is 13 MB, too slow for a unit test).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stepwise.config.redaction import Redactor

TESTS = Path(__file__).resolve().parents[1]
# Fake keys of the shapes providers issue (random characters of each provider's alphabet and length).
KEYS = [
    "sk-proj-TwdVUHubyNTahzbaM8qLD17l8u0WRDSywVEJc99LCT_x7Cmh",  # OpenAI project key
    "+AHX4VsJz02pYgiDKma82Dfa45mkWQyRQG3BAF5d",  # AWS secret access key
    "ghp_bSsl1Mjcg5RqHSEJkWEYabYkYYQwAcDtR6I5",  # GitHub personal access token
    "xoxb-2553004828-1604916407999-vYI6AY7YJJwNbVzpUwIvXIX0",  # Slack bot token
    "sk_live_WeDJQxmX6WIwXaAkb6A2i54A",  # Stripe secret key
    "eed1834135ebe4f72085fef3b9c8da1d",  # 32 hex digits (Datadog, many internal APIs)
    "AIzaUuBeh9BqaVBcpMFzeJX-PuqMXYjNguI7i-z",  # Google API key
    "8891ebd2-8813-4fdf-9a29-66ff93e93605",  # a UUID used as a key
    "HeXSgVtDpVMG",  # 12 characters
    "pf4gegVjm",  # 9 characters: its parts are 8
]
_TEXT_SUFFIXES = {".json", ".yaml", ".yml", ".md", ".txt"}
REAL_DOCUMENTS = TESTS / "fixtures" / "openapi" / "real"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def document_strings(name: str) -> list[str]:
    """Every string of a real OpenAPI description of the fixtures."""
    return list(_strings(json.loads(gzip.decompress((REAL_DOCUMENTS / name).read_bytes()))))


def ordinary_texts() -> list[str]:
    """Every string of the completions corpus, and every text document of the fixtures, whole."""
    texts = [
        text
        for path in sorted((TESTS / "corpus" / "cases").glob("*.json"))
        for text in _strings(json.loads(path.read_text("utf-8")))
    ]
    texts += [
        path.read_text("utf-8")
        for path in sorted((TESTS / "fixtures").rglob("*"))
        if path.is_file() and path.suffix in _TEXT_SUFFIXES
    ]
    return texts


def replaced(redactor: Redactor, texts: list[str]) -> list[tuple[str, str]]:
    """(text, redacted) for each text in which the redactor replaced something."""
    return [(text, redacted) for text in texts if (redacted := redactor.redact(text)) != text]


def test_keys_of_every_shape_replace_nothing_in_the_real_texts_of_the_tests() -> None:
    # Given a redactor that knows keys of ten shapes, and the real texts of the corpus and the fixtures
    redactor = Redactor(KEYS)
    texts = ordinary_texts() + document_strings("discord-v10.json.gz")

    # When each text is redacted
    changed = replaced(redactor, texts)

    # Then not one was changed (and there was text to change: the corpus and the fixtures are large)
    assert (len(changed), sum(map(len, texts)) > 600_000) == (0, True), changed[:3]


if __name__ == "__main__":
    corpus = ordinary_texts() + [
        text for path in sorted(REAL_DOCUMENTS.glob("*.gz")) for text in document_strings(path.name)
    ]
    found = replaced(Redactor(KEYS), corpus)
    print(f"{len(KEYS)} keys, {len(corpus)} texts, {sum(map(len, corpus))} characters: {len(found)} texts changed")
