"""Which DynamoDB failures a later attempt may fix, raised as the error the state machine retries."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from stepwise.errors import StoreTransientError

_TRANSIENT_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
    }
)


def error_code(exc: ClientError) -> str:
    """The error code DynamoDB answered with."""
    return str(exc.response.get("Error", {}).get("Code", ""))


@contextmanager
def transient_errors() -> Iterator[None]:
    """Raise `StoreTransientError`, which the state machine retries, for what a later attempt may fix.

    botocore has already retried these itself; what reaches here is throttling or an unreachable
    endpoint that outlasted its retries.
    """
    try:
        yield
    except ClientError as exc:
        code = error_code(exc)
        if code in _TRANSIENT_CODES:
            raise StoreTransientError(f"DynamoDB {code}: {exc.response.get('Error', {}).get('Message', '')}") from exc
        raise
    except (BotoConnectionError, HTTPClientError) as exc:
        raise StoreTransientError(f"DynamoDB unreachable: {type(exc).__name__}") from exc
