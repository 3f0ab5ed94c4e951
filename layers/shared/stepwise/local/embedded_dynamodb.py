"""An embedded DynamoDB endpoint on loopback (moto's threaded server), the default store when running locally."""

from __future__ import annotations

import logging
from typing import Any

from stepwise.local.template import SamTemplate

TABLE_LOGICAL_ID = "ConversationTable"


class EmbeddedDynamoDB:
    """A DynamoDB-compatible HTTP endpoint on 127.0.0.1, in this process, gone when it stops."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer  # deferred: only local runs need moto

        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.endpoint_url = ""

    def start(self) -> EmbeddedDynamoDB:
        """Start serving; `endpoint_url` is set once it listens."""
        # werkzeug logs every request at INFO; a local run's output is the trace, not the store's traffic
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint_url = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._server.stop()

    def __enter__(self) -> EmbeddedDynamoDB:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def create_table_from_template(client: Any, template: SamTemplate, table_name: str) -> None:
    """Create the conversation table with the key schema `template.yaml` declares (idempotent)."""
    properties = template.document["Resources"][TABLE_LOGICAL_ID]["Properties"]
    existing = client.list_tables().get("TableNames", [])
    if table_name in existing:
        return
    client.create_table(
        TableName=table_name,
        AttributeDefinitions=properties["AttributeDefinitions"],
        KeySchema=properties["KeySchema"],
        BillingMode=properties.get("BillingMode", "PAY_PER_REQUEST"),
    )
    ttl = properties.get("TimeToLiveSpecification")
    if ttl:
        client.update_time_to_live(TableName=table_name, TimeToLiveSpecification=ttl)
