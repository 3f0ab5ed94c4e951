"""An embedded DynamoDB endpoint on loopback (moto's threaded server), the default store when running locally."""

from __future__ import annotations

import logging
import threading
from typing import Any

from stepwise.local.template import SamTemplate

TABLE_LOGICAL_ID = "ConversationTable"


class _OneRequestAtATime:
    """WSGI middleware that serves one request at a time.

    moto's backend is not thread-safe: a cancelled transaction restores a copy of the whole table taken
    when it began, which would erase the writes of concurrent requests. Concurrent runs (`stepwise
    serve`) therefore queue here, as DynamoDB itself would never show them.
    """

    def __init__(self, app: Any) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        with self._lock:
            return list(self._app(environ, start_response))


class EmbeddedDynamoDB:
    """A DynamoDB-compatible HTTP endpoint on 127.0.0.1, in this process, gone when it stops."""

    def __init__(self) -> None:
        self.endpoint_url = ""
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> EmbeddedDynamoDB:
        """Start serving; `endpoint_url` is set once it listens."""
        # deferred: only local runs need moto and werkzeug
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        # werkzeug logs every request at INFO; a local run's output is the trace, not the store's traffic
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        app = _OneRequestAtATime(DomainDispatcherApplication(create_backend_app))
        self._server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
        # a short poll interval makes stop() quick (serve_forever's default, 0.5 s, is a wait at every stop)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="embedded-dynamodb", daemon=True
        )
        self._thread.start()
        self.endpoint_url = f"http://127.0.0.1:{self._server.server_port}"
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> EmbeddedDynamoDB:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def create_table_from_template(client: Any, template: SamTemplate, table_name: str) -> None:
    """Create the conversation table with the keys and indexes `template.yaml` declares (idempotent); a
    table made by an earlier version gets the indexes it lacks."""
    properties = template.document["Resources"][TABLE_LOGICAL_ID]["Properties"]
    indexes = properties.get("GlobalSecondaryIndexes")
    existing = client.list_tables().get("TableNames", [])
    if table_name in existing:
        _add_missing_indexes(client, table_name, properties["AttributeDefinitions"], indexes or [])
        return
    client.create_table(
        TableName=table_name,
        AttributeDefinitions=properties["AttributeDefinitions"],
        KeySchema=properties["KeySchema"],
        BillingMode=properties.get("BillingMode", "PAY_PER_REQUEST"),
        **({"GlobalSecondaryIndexes": indexes} if indexes else {}),
    )
    ttl = properties.get("TimeToLiveSpecification")
    if ttl:
        client.update_time_to_live(TableName=table_name, TimeToLiveSpecification=ttl)


def _add_missing_indexes(
    client: Any, table_name: str, attributes: list[dict[str, str]], indexes: list[dict[str, Any]]
) -> None:
    """Add to an existing table each index of `indexes` it does not have, one UpdateTable each (DynamoDB
    creates one index per update). The items already stored are indexed as they are."""
    description = client.describe_table(TableName=table_name)["Table"]
    present = {index["IndexName"] for index in description.get("GlobalSecondaryIndexes", [])}
    for index in indexes:
        if index["IndexName"] in present:
            continue
        client.update_table(
            TableName=table_name,
            AttributeDefinitions=attributes,
            GlobalSecondaryIndexUpdates=[{"Create": index}],
        )
