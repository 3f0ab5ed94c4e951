"""`Idempotency-Key`: the same caller, key and body start one run; the same key with another body is 409.

Powertools idempotency keeps its records in the conversation table, beside the runs: partition
`IDEMPOTENCY`, sort key `<function>#<hash of owner and key>`, TTL on the table's `expires_at`. Those
items belong to Powertools; apart from the conversation store this is the only code that writes to
DynamoDB. A start that fails removes its record, so the request can be retried with the same key.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stepwise.steps.api.problems import IdempotencyConflict, IdempotencyInProgress, Unavailable

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

IDEMPOTENCY_PARTITION = "IDEMPOTENCY"
DEFAULT_KEY_LIFETIME_SECONDS = 24 * 60 * 60


def _start(request: dict[str, Any], start: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    return start()


class IdempotentStarts:
    """Runs a start at most once per (owner, Idempotency-Key), remembering its response."""

    def __init__(
        self, dynamodb_client: Any, table_name: str, *, key_lifetime_seconds: int = DEFAULT_KEY_LIFETIME_SECONDS
    ) -> None:
        self._dynamodb_client = dynamodb_client
        self._table_name = table_name
        self._key_lifetime_seconds = key_lifetime_seconds
        # Powertools' idempotency is loaded by the first start that carries a key: a request without one,
        # and the streaming function's run events, never need it
        self._built: tuple[IdempotencyConfig, Callable[..., dict[str, Any]]] | None = None
        self._building = threading.Lock()

    def _idempotent_start(self) -> tuple[IdempotencyConfig, Callable[..., dict[str, Any]]]:
        with self._building:
            if self._built is None:
                from aws_lambda_powertools.utilities.idempotency import (
                    DynamoDBPersistenceLayer,
                    IdempotencyConfig,
                    idempotent_function,
                )

                persistence = DynamoDBPersistenceLayer(
                    table_name=self._table_name,
                    key_attr="pk",
                    sort_key_attr="sk",
                    static_pk_value=IDEMPOTENCY_PARTITION,
                    expiry_attr="expires_at",
                    boto3_client=self._dynamodb_client,
                )
                config = IdempotencyConfig(
                    event_key_jmespath="[owner, key]",
                    payload_validation_jmespath="body",
                    raise_on_no_idempotency_key=True,
                    expires_after_seconds=self._key_lifetime_seconds,
                )
                start_once = idempotent_function(
                    _start, data_keyword_argument="request", persistence_store=persistence, config=config
                )
                self._built = (config, start_once)
            return self._built

    def run_once(
        self,
        *,
        owner: str,
        key: str,
        body: dict[str, Any],
        start: Callable[[], dict[str, Any]],
        lambda_context: Any = None,
    ) -> dict[str, Any]:
        """Call `start` unless this owner already used `key`; then return the first call's response.

        Raises `IdempotencyConflict` (409) when `body` differs from the first request's,
        `IdempotencyInProgress` (409) while the first request is still being handled, and `Unavailable`
        (503) when the idempotency records cannot be read or written.
        """
        config, start_once = self._idempotent_start()
        from aws_lambda_powertools.utilities.idempotency.exceptions import (
            IdempotencyAlreadyInProgressError,
            IdempotencyPersistenceLayerError,
            IdempotencyValidationError,
        )

        if lambda_context is not None:
            # Lets Powertools expire an in-progress record of an invocation that timed out.
            config.register_lambda_context(lambda_context)
        try:
            response: dict[str, Any] = start_once(request={"owner": owner, "key": key, "body": body}, start=start)
        except IdempotencyValidationError:
            raise IdempotencyConflict("this Idempotency-Key was already used with another request body") from None
        except IdempotencyAlreadyInProgressError:
            raise IdempotencyInProgress(
                "the first request with this Idempotency-Key is still being handled; retry"
            ) from None
        except IdempotencyPersistenceLayerError:
            raise Unavailable("the run store is busy or unreachable; retry") from None
        return response
