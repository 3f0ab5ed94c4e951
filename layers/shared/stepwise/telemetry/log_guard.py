"""The log guard: no log record of this process, whatever its logger or level, can print a known secret.

A logger's filter only sees records of that very logger, not of its children (`botocore.parsers` is a
child of `botocore`), and handlers are added by whoever configures logging. The one place every record
passes through is the record factory, so the guard wraps it:

- every record's message is redacted with every live `Redactor` (`redact_known_secrets`);
- an exception attached to a record (`logger.exception`) whose traceback holds a secret is replaced by a
  stand-in of the same name carrying the redacted traceback, because formatters (Powertools' among them)
  format the exception themselves, after the record is made;
- a DEBUG record of an HTTP or AWS client library has its arguments withheld. Those records carry
  request and response bodies (botocore logs the SSM response, decrypted secret included, before the
  resolver has even seen it, so no redactor could know it yet) and prompts. Their format string, which
  is the library's own constant text, is kept so the record still says what happened.
"""

from __future__ import annotations

import logging
import threading
import traceback
from typing import Any

from stepwise.config.redaction import redact_known_secrets

# The libraries whose debug records hold request or response data: AWS SDK, HTTP clients, MCP and A2A clients.
LIBRARY_LOGGERS = ("botocore", "boto3", "s3transfer", "urllib3", "httpx", "httpcore", "httpx2", "mcp", "a2a")
WITHHELD = "[arguments withheld: a library's debug record may hold request or response data]"

_INSTALL_LOCK = threading.Lock()


def is_library_logger(name: str) -> bool:
    """True for the loggers of `LIBRARY_LOGGERS` and their children."""
    return any(name == library or name.startswith(f"{library}.") for library in LIBRARY_LOGGERS)


def guard_record(record: logging.LogRecord) -> logging.LogRecord:
    """Withhold a library debug record's data and redact known secrets from the message, in place."""
    if record.levelno < logging.INFO and is_library_logger(record.name):
        if record.args:
            record.msg, record.args = f"{record.msg} {WITHHELD}", None
        elif isinstance(record.msg, str):
            # Formatted before logging (httpcore's trace lines): the first word names the event.
            record.msg = f"{record.msg.split(' ', 1)[0]} {WITHHELD}"
    _redact_exception(record)
    try:
        message = record.getMessage()
    except Exception:  # a record whose arguments do not fit its format is the logging module's to report
        return record
    redacted = redact_known_secrets(message)
    if redacted != message:
        record.msg, record.args = redacted, None
    return record


def _redact_exception(record: logging.LogRecord) -> None:
    """Replace the record's exception by a redacted stand-in when its traceback holds a known secret."""
    if not isinstance(record.exc_info, tuple) or record.exc_info[1] is None:
        return
    exc_type, exc, tb = record.exc_info
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    redacted = redact_known_secrets(text)
    if redacted == text:
        return
    name = getattr(exc_type, "__name__", "Exception")
    stand_in_type = type(name, (Exception,), {"__module__": getattr(exc_type, "__module__", __name__)})
    stand_in = stand_in_type(redacted.rstrip())
    record.exc_info, record.exc_text = (stand_in_type, stand_in, None), None


def install_log_guard() -> None:
    """Wrap the process's log record factory with `guard_record`, once."""
    with _INSTALL_LOCK:
        previous = logging.getLogRecordFactory()
        if getattr(previous, "stepwise_log_guard", False):
            return

        def guarded_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            return guard_record(previous(*args, **kwargs))

        guarded_factory.stepwise_log_guard = True  # type: ignore[attr-defined]
        logging.setLogRecordFactory(guarded_factory)
