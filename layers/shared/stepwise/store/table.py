"""One DynamoDB table's calls as every part of the store makes them: failures sorted into the errors the state
machine retries or not (`transient_errors`), items decoded, Query pages and unprocessed BatchGetItem keys
followed, the conditional put that makes each write a commit record, and every item written made to fit
DynamoDB's item limit first (`stepwise.store.item_limit`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from botocore.exceptions import ClientError

from stepwise.store.codec import deserialize_item, serialize_item, serialize_value
from stepwise.store.item_limit import MAX_ITEM_BYTES, AttributeValue, fit_item
from stepwise.store.transient import condition_failed, transient_errors
from stepwise.telemetry.observability import logger


class Table:
    """The conversation table, through a boto3 DynamoDB client."""

    def __init__(self, client: Any, name: str) -> None:
        self._client = client
        self.name = name

    def call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        """The client's answer to `operation`, its failures sorted by `transient_errors`."""
        with transient_errors():
            response: dict[str, Any] = getattr(self._client, operation)(**kwargs)
        return response

    def get_item(self, parameters: dict[str, Any]) -> dict[str, Any] | None:
        """The decoded item GetItem finds with `parameters` (its key, projection...), or None."""
        item = self.call("get_item", TableName=self.name, **parameters).get("Item")
        return deserialize_item(item) if item else None

    def fitted(self, item: dict[str, Any], *, limit: int = MAX_ITEM_BYTES) -> dict[str, AttributeValue]:
        """`item` serialized, its longest strings cut with a marker if it would not fit `limit` (a warning
        names the item and what was cut)."""
        serialized, cut = fit_item(serialize_item(item), limit=limit)
        if cut:
            _log_cut("item cut to fit", item, cut)
        return serialized

    def fitted_values(
        self, key: dict[str, Any], values: dict[str, Any], *, rest: dict[str, Any], limit: int = MAX_ITEM_BYTES
    ) -> dict[str, AttributeValue]:
        """`values`, serialized, as an update may set them on the item `key` names, whose other attributes
        are `rest`: only `values` are cut so that the item they make with `rest` fits `limit`."""
        others = {name: value for name, value in rest.items() if name not in values and name not in key}
        serialized = serialize_item(key | others | values)
        fitted, cut = fit_item(serialized, limit=limit, frozen=frozenset(serialized) - frozenset(values))
        if cut:
            _log_cut("update cut to fit", key, cut)
        return {name: fitted[name] for name in values if name in fitted}

    def put_if_absent(
        self, item: dict[str, Any], *, ours_if_identical: bool = False, limit: int = MAX_ITEM_BYTES
    ) -> bool:
        """Put an item unless its key exists; False when it already did. An item over `limit` is put cut
        (`fitted`).

        With `ours_if_identical`, an identical item found under the key counts as this write's own: the
        SDK retried a put whose first answer was lost, and the condition then saw the first put.
        """
        serialized = self.fitted(item, limit=limit)
        try:
            with transient_errors():
                self._client.put_item(
                    TableName=self.name, Item=serialized, ConditionExpression="attribute_not_exists(pk)"
                )
        except ClientError as exc:
            if not condition_failed(exc):
                raise
            if not ours_if_identical:
                return False
            existing = self.call(
                "get_item",
                TableName=self.name,
                Key={"pk": serialized["pk"], "sk": serialized["sk"]},
                ConsistentRead=True,
            ).get("Item")
            return existing == serialized
        return True

    def query_items(self, parameters: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every item one Query returns, following pagination."""
        pages = self._client.get_paginator("query").paginate(TableName=self.name, **parameters)
        with transient_errors():
            for page in pages:
                for item in page.get("Items", []):
                    yield deserialize_item(item)

    def query(
        self, pk: str, prefix: str, *, forward: bool = True, attributes: dict[str, Any] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every item of a partition whose sort key starts with `prefix` (only `attributes`, if given)."""
        parameters: dict[str, Any] = {
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeValues": {":pk": serialize_value(pk), ":prefix": serialize_value(prefix)},
            "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk"},
            "ConsistentRead": True,
            "ScanIndexForward": forward,
        }
        if attributes:
            parameters["ProjectionExpression"] = attributes["ProjectionExpression"]
            parameters["ExpressionAttributeNames"] |= attributes["ExpressionAttributeNames"]
        return self.query_items(parameters)

    def batch_get(self, pk: str, sort_keys: list[str]) -> dict[str, dict[str, Any]]:
        """The items of `pk` under `sort_keys` that exist, by sort key, following unprocessed keys."""
        request = {
            self.name: {
                "Keys": [serialize_item({"pk": pk, "sk": sk}) for sk in sort_keys],
                "ConsistentRead": True,
            }
        }
        found: dict[str, dict[str, Any]] = {}
        while request:
            response = self.call("batch_get_item", RequestItems=request)
            for item in response.get("Responses", {}).get(self.name, []):
                decoded = deserialize_item(item)
                found[decoded["sk"]] = decoded
            request = response.get("UnprocessedKeys") or {}
        return found


def _log_cut(message: str, key: dict[str, Any], cut: list[str]) -> None:
    """Warn that an item was cut: its key (a session's only by its kind, as it holds the owner), the
    attributes cut and how many strings; never the paths inside them, which hold a model's own names."""
    pk = str(key.get("pk", ""))
    logger.warning(
        message,
        extra={
            "pk": pk if pk.startswith("RUN#") else pk.split("#", 1)[0],
            "sk": key.get("sk"),
            "attributes": sorted({where.split(".", 1)[0].split("[", 1)[0] for where in cut}),
            "strings_cut": len(cut),
        },
    )
