"""No log record can print a secret: not the SDK's, not the HTTP clients', not ours, at any level."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from stepwise.config.credentials import SecretResolver
from stepwise.config.redaction import Redactor
from stepwise.telemetry.log_guard import WITHHELD
from stepwise.telemetry.observability import logger as service_logger
from tests.unit.test_secret_encodings import CANARY, ENCODINGS


@pytest.fixture
def everything_at_debug(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """The root logger at DEBUG, as an operator chasing a problem would set it."""
    caplog.set_level(logging.DEBUG)
    yield caplog


def leaked_forms(text: str) -> list[str]:
    return [name for name, form in ENCODINGS.items() if form in text]


def test_botocore_at_debug_never_prints_the_ssm_secret_it_fetched(
    everything_at_debug: pytest.LogCaptureFixture,
) -> None:
    with mock_aws():
        # Given the canary in SSM as a SecureString
        boto3.client("ssm", region_name="us-east-1").put_parameter(
            Name="/stepwise/canary", Value=CANARY, Type="SecureString"
        )
        everything_at_debug.clear()

        # When the resolver fetches it with every logger at DEBUG
        assert SecretResolver().resolve("ssm:/stepwise/canary") == CANARY

    # Then botocore did log the exchange (searching means something), with its data withheld
    botocore_records = [record for record in everything_at_debug.records if record.name.startswith("botocore")]
    assert any("Response body" in record.getMessage() for record in botocore_records)
    assert all(WITHHELD in record.getMessage() for record in botocore_records if record.levelno == logging.DEBUG)
    # And no form of the secret is in any record
    assert leaked_forms(everything_at_debug.text) == []


@pytest.mark.parametrize("library", ["httpx", "httpcore.http11", "urllib3.connectionpool", "mcp.client"])
def test_a_known_secret_in_a_library_record_at_info_is_redacted(
    everything_at_debug: pytest.LogCaptureFixture, library: str
) -> None:
    # Given a redactor that knows the canary
    redactor = Redactor([CANARY])

    # When a library logs a URL holding it percent-encoded in lower case, and JSON-escaped
    logging.getLogger(library).warning(
        "HTTP Request: GET %s", f"https://api.test/?key={ENCODINGS['percent-encoded, lower case']}"
    )
    logging.getLogger(library).error("body: %s", ENCODINGS["JSON-escaped"])

    # Then the records read with the key replaced
    assert everything_at_debug.messages == ["HTTP Request: GET https://api.test/?key=***", "body: ***"]
    assert len(redactor) > 0


def test_a_library_debug_record_formatted_before_logging_keeps_only_its_event_name(
    everything_at_debug: pytest.LogCaptureFixture,
) -> None:
    # When httpcore logs a trace line with response headers already in it
    logging.getLogger("httpcore.http11").debug("receive_response_headers.complete return_value=(b'Set-Cookie', b'x')")

    # Then only the event's name is left
    assert everything_at_debug.messages == [f"receive_response_headers.complete {WITHHELD}"]


def test_the_service_logger_at_debug_redacts_every_encoding(everything_at_debug: pytest.LogCaptureFixture) -> None:
    # Given a redactor that knows the canary, and the service's own logger at DEBUG
    redactor = Redactor([CANARY])
    previous = service_logger.log_level
    service_logger.setLevel("DEBUG")
    try:
        # When the service logs text holding each encoding
        for form in ENCODINGS.values():
            service_logger.debug(f"echoed {form}")
    finally:
        service_logger.setLevel(previous)

    # Then each was logged, and none is left
    assert len(redactor) > 0
    echoed = [message for message in everything_at_debug.messages if message.startswith("echoed ")]
    assert len(echoed) == len(ENCODINGS)
    assert all("***" in message for message in echoed)
    assert leaked_forms(everything_at_debug.text) == []


def test_an_exception_logged_with_its_traceback_never_prints_the_secret(
    everything_at_debug: pytest.LogCaptureFixture,
) -> None:
    # Given a redactor that knows the canary, and Powertools' own formatter writing the service's records
    redactor = Redactor([CANARY])
    printed = io.StringIO()
    handler = logging.StreamHandler(printed)
    handler.setFormatter(service_logger.registered_formatter)
    logging.getLogger(service_logger.name).addHandler(handler)
    try:
        # When an error whose message holds the key (as an HTTP client's error names the URL it called)
        # is logged with its traceback
        try:
            raise RuntimeError(f"GET https://api.test/?key={ENCODINGS['percent-encoded, lower case']} failed")
        except RuntimeError:
            service_logger.exception("tool call failed")
    finally:
        logging.getLogger(service_logger.name).removeHandler(handler)

    # Then the traceback was printed, still naming the error, with the key replaced
    assert len(redactor) > 0
    assert '"exception_name":"RuntimeError"' in printed.getvalue()
    assert "key=***" in printed.getvalue()
    assert leaked_forms(printed.getvalue() + everything_at_debug.text) == []
