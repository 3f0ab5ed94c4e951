"""Secrets in the HTTP clients' own log records (httpx logs request URLs) are scrubbed."""

from __future__ import annotations

import logging

import pytest

from stepwise.credentials import RedactingLogFilter, Redactor, redact_library_logs


def test_a_secret_in_a_library_log_record_is_replaced(caplog: pytest.LogCaptureFixture) -> None:
    # Given a redactor that knows a key, attached to a library logger
    redactor = Redactor(["query-key-81f2"])
    redact_library_logs(redactor, ["fake_http_library"])
    caplog.set_level(logging.INFO)
    # When the library logs a URL holding the key
    logging.getLogger("fake_http_library").info("HTTP Request: GET %s", "https://api.example.com/?key=query-key-81f2")
    # Then the record reads with the key replaced
    assert caplog.messages == ["HTTP Request: GET https://api.example.com/?key=***"]


def test_the_filter_is_attached_once_per_redactor() -> None:
    # Given one redactor attached twice to the same logger
    redactor = Redactor(["another-key-1234"])
    redact_library_logs(redactor, ["fake_http_library.twice"])
    redact_library_logs(redactor, ["fake_http_library.twice"])
    # When the logger's filters are counted
    filters = [f for f in logging.getLogger("fake_http_library.twice").filters if isinstance(f, RedactingLogFilter)]
    # Then there is one
    assert len(filters) == 1
