"""The DynamoDB fault proxy injects what it claims, as the SDK sees it (with the SDK's retries off)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError

from stepwise.local.embedded_dynamodb import create_table_from_template
from stepwise.local.template import SamTemplate
from tests.conftest import PROJECT_ROOT
from tests.faults.dynamodb_proxy import Always, Combined, EveryNth, Fault, FaultyDynamoDBProxy
from tests.faults.harness import armed

ITEM = {"pk": {"S": "RUN#1"}, "sk": {"S": "META"}}


@pytest.fixture
def table(unique_table_name: str) -> str:
    """The test's own table: the session's DynamoDB Local outlives it, and another test's item must not count."""
    return unique_table_name


@pytest.fixture
def client(proxy: FaultyDynamoDBProxy, table: str) -> Iterator[Any]:
    """A DynamoDB client through the proxy that tries each call once, on a fresh table."""
    dynamodb = boto3.client(
        "dynamodb", endpoint_url=proxy.url, region_name="us-east-1", config=Config(retries={"total_max_attempts": 1})
    )
    create_table_from_template(dynamodb, SamTemplate.load(PROJECT_ROOT / "template.yaml"), table)
    yield dynamodb
    dynamodb.close()


def stored(client: Any, table: str) -> bool:
    """Whether the table holds the item the tests put."""
    return "Item" in client.get_item(TableName=table, Key=ITEM, ConsistentRead=True)


def test_a_throttled_request_gets_dynamodbs_own_error_and_is_not_applied(
    client: Any, proxy: FaultyDynamoDBProxy, table: str
) -> None:
    # Given a proxy that throttles every request
    with armed(proxy, Always(Fault.THROTTLE)), pytest.raises(ClientError) as raised:
        # When an item is put
        client.put_item(TableName=table, Item=ITEM)
    # Then the SDK reads a ProvisionedThroughputExceededException (HTTP 400), and nothing was written
    error = raised.value.response
    assert (error["Error"]["Code"], error["ResponseMetadata"]["HTTPStatusCode"]) == (
        "ProvisionedThroughputExceededException",
        400,
    )
    assert not stored(client, table)


@pytest.mark.parametrize(("fault", "applied"), [(Fault.DROP_BEFORE, False), (Fault.DROP_AFTER, True)])
def test_a_dropped_connection_has_no_answer_and_applies_the_write_only_when_dropped_after(
    client: Any, proxy: FaultyDynamoDBProxy, table: str, fault: Fault, applied: bool
) -> None:
    # Given a proxy that drops every connection
    with armed(proxy, Always(fault)), pytest.raises(ConnectionClosedError):
        # When an item is put
        client.put_item(TableName=table, Item=ITEM)
    # Then the SDK got no answer, and the table holds the item only if the drop came after the write
    assert stored(client, table) is applied


def test_bursts_fault_the_requests_of_their_schedule_only() -> None:
    # Given bursts of 2 every 5 requests, and a second schedule shifted by 2
    schedule = Combined(
        (EveryNth(period=5, fault=Fault.THROTTLE, burst=2), EveryNth(period=5, fault=Fault.DROP_AFTER, offset=2))
    )
    # When requests 1 to 12 are numbered through it
    faults = {number: schedule(number) for number in range(1, 13)}
    # Then requests 5, 6, 10, 11 are throttled, request 7 and 12 dropped after, the rest forwarded
    assert {number: fault for number, fault in faults.items() if fault is not Fault.FORWARD} == {
        5: Fault.THROTTLE,
        6: Fault.THROTTLE,
        7: Fault.DROP_AFTER,
        10: Fault.THROTTLE,
        11: Fault.THROTTLE,
        12: Fault.DROP_AFTER,
    }
