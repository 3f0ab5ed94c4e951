"""A tool's whole result against AWS's DynamoDB Local, which refuses an item over 400 KB (counted in UTF-8
bytes) as DynamoDB does, where moto lets it pass: written in parts by the store and read back whole as the
step endpoint reads it."""

from __future__ import annotations

from typing import Any

from stepwise.store import ConversationStore
from stepwise.store.item_limit import MAX_ITEM_BYTES, item_size
from tests.integration.test_store import make_meta

# 400 characters of 700 UTF-8 bytes: two- and three-byte characters, so a part's byte limit falls inside one
CHUNK = "é" * 100 + "漢" * 100 + "x" * 200
WHOLE = CHUNK * 2500 + "tail"


def test_a_1mb_result_of_multibyte_characters_is_stored_in_parts_the_real_engine_accepts_and_read_back_whole(
    dynamodb_local_table: tuple[Any, str],
) -> None:
    # Given the store on DynamoDB Local, and a result of 1,000,004 characters (1.75 MB in UTF-8)
    client, table = dynamodb_local_table
    store = ConversationStore(client, table)
    run = make_meta("run-whole-1mb")
    # When it is stored as the whole result of the first call of iteration 1
    parts = store.tool_outputs.put(run, 1, 0, WHOLE)
    # Then the engine accepted every part, each under the item limit with room to spare
    pages = client.get_paginator("query").paginate(  # a Query page stops at 1 MB read: four parts
        TableName=table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues={":pk": {"S": "RUN#run-whole-1mb"}, ":prefix": {"S": "TOOLOUT#"}},
    )
    sizes = [item_size(item) for page in pages for item in page["Items"]]
    assert (parts, len(sizes), max(sizes) < MAX_ITEM_BYTES * 0.8) == (6, 6, True)
    # And the step endpoint's read joins them into the result, character for character
    read = store.tool_outputs.read(run.run_id, 1, 0, parts)
    assert (read is not None and len(read), read == WHOLE) == (len(WHOLE), True)
