"""Who is calling, and which runs they may see: a run is visible to its owner only.

The owner is the API key's id under API-key auth, or the IAM principal under IAM auth, both taken from
the request context API Gateway fills in (never from a header the caller controls). Anyone else asking
for a run gets 404, exactly as for a run that does not exist, so run ids cannot be probed.

The owner becomes a key of the store (the `RunsByOwner` index's partition, part of idempotency records),
and DynamoDB refuses a partition key over 2,048 bytes, so an identity is checked before anything is
written: at most `MAX_OWNER_CHARS` printable ASCII characters, else a 400 naming the header it came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from stepwise.models.api_requests import RUN_ID_PATTERN
from stepwise.models.run import RunMeta
from stepwise.steps.api.problems import InvalidIdentity, InvalidRequest, NotFound, Unauthorized
from stepwise.store import ConversationStore

_RUN_ID = re.compile(RUN_ID_PATTERN)

# API Gateway's key ids and IAM ARNs are printable ASCII far below this; locally the key itself is the
# owner, so a key of any length would otherwise reach the store's keys.
MAX_OWNER_CHARS = 512
_OWNER = re.compile(r"[\x21-\x7e]+")


def request_owner(event: Mapping[str, Any]) -> str:
    """The caller's identity: API key id, else IAM user ARN, else IAM caller; 401 when there is none.

    `event` is the proxy event, as a dict or Powertools' `APIGatewayProxyEvent` (a mapping of it): the
    streaming function reads it without loading Powertools' event classes.
    """
    identity = (event.get("requestContext") or {}).get("identity") or {}
    owner = identity.get("apiKeyId") or identity.get("userArn") or identity.get("caller")
    if not owner:
        raise Unauthorized("the request carries no API key or IAM identity")
    owner = str(owner)
    if len(owner) > MAX_OWNER_CHARS or not _OWNER.fullmatch(owner):
        raise InvalidIdentity(
            _identity_source(event),
            f"must be 1-{MAX_OWNER_CHARS} printable ASCII characters without spaces; "
            f"got {len(owner)} characters{'' if owner.isascii() else ', not all ASCII'}",
        )
    return owner


def _identity_source(event: Mapping[str, Any]) -> str:
    """The header the caller's identity came from, as the API names fields."""
    names = {str(name).lower() for name in (event.get("headers") or {})}
    if "x-api-key" in names:
        return "x-api-key (header)"
    if "authorization" in names:
        return "Authorization (header)"
    return "the caller's identity"


def parse_run_reference(reference: str) -> str:
    """The run id in `reference`: a run id, or the Step Functions execution ARN whose name it is."""
    run_id = unquote(reference).rsplit(":", 1)[-1]
    if not _RUN_ID.fullmatch(run_id):
        raise InvalidRequest.of(
            "run_id (path parameter)", "must be a run id (1-80 of A-Z a-z 0-9 _ -) or an execution ARN ending in one"
        )
    return run_id


def visible_run(store: ConversationStore, run_id: str, owner: str) -> RunMeta:
    """The run's META if `owner` owns it; 404 otherwise, whether it exists or not."""
    meta = store.get_run(run_id)
    if meta is None or meta.owner != owner:
        raise NotFound(f"no run {run_id}")
    return meta
