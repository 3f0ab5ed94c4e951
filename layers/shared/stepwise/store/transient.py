"""Which DynamoDB failures a later attempt may fix, raised as the error the state machine retries."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import ClientError, HTTPClientError, ParamValidationError
from botocore.exceptions import ConnectionError as BotoConnectionError

from stepwise.errors import StorePermanentError, StoreTransientError

_TRANSIENT_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        # a write of an item an approval's transaction holds at that instant (`approvals.answer`)
        "TransactionConflictException",
    }
)


def error_code(exc: ClientError) -> str:
    """The error code DynamoDB answered with."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def condition_failed(exc: ClientError) -> bool:
    """True when a conditional write was refused because its condition did not hold."""
    return error_code(exc) == "ConditionalCheckFailedException"


# Codes a caller of the store decides about itself (a conditional write that found the item there).
_CALLER_HANDLED_CODES = frozenset({"ConditionalCheckFailedException", "TransactionCanceledException"})


@contextmanager
def transient_errors() -> Iterator[None]:
    """Sort DynamoDB's failures: transient ones become `StoreTransientError`, which the state machine
    retries; everything else fails fast as `StorePermanentError` with its reason.

    botocore has already retried throttling, 5xx and connection failures itself; what reaches here as
    transient outlasted those retries. A validation or serialization error is the same on every
    attempt, so retrying it would only hold the caller for seconds before the same failure.
    """
    try:
        yield
    except ClientError as exc:
        code = error_code(exc)
        message = exc.response.get("Error", {}).get("Message", "")
        if code in _TRANSIENT_CODES:
            raise StoreTransientError(f"DynamoDB {code}: {message}") from exc
        if code in _CALLER_HANDLED_CODES:
            raise
        raise StorePermanentError(f"DynamoDB {code or 'error'}: {message}") from exc
    except (BotoConnectionError, HTTPClientError) as exc:
        raise StoreTransientError(f"DynamoDB unreachable: {type(exc).__name__}") from exc
    except (ParamValidationError, UnicodeError, TypeError, ValueError) as exc:
        # botocore refused the request before sending it, or could not encode it.
        raise StorePermanentError(f"DynamoDB request not sent: {type(exc).__name__}: {exc}") from exc
