"""An OTLP/HTTP trace receiver on 127.0.0.1: what a collector receives from the SDK's OTLP exporter
(`POST /v1/traces`, a protobuf `ExportTraceServiceRequest`), decoded with `opentelemetry-proto`."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

KINDS = {value: name.removeprefix("SPAN_KIND_") for name, value in Span.SpanKind.items()}
STATUSES = {value: name.removeprefix("STATUS_CODE_") for name, value in Status.StatusCode.items()}


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as the receiver decoded it: ids in hex, kind and status by name (`SERVER`, `ERROR`...)."""

    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str | None
    attributes: dict[str, Any]
    status: str
    scope: str


def _value(value: AnyValue) -> Any:
    field = value.WhichOneof("value")
    if field == "array_value":
        return tuple(_value(item) for item in value.array_value.values)
    return getattr(value, field) if field else None


def decoded(body: bytes) -> list[ReceivedSpan]:
    """The spans of one `ExportTraceServiceRequest`."""
    request = ExportTraceServiceRequest.FromString(body)
    return [
        ReceivedSpan(
            name=span.name,
            kind=KINDS[span.kind],
            trace_id=span.trace_id.hex(),
            span_id=span.span_id.hex(),
            parent_id=span.parent_span_id.hex() or None,
            attributes={attribute.key: _value(attribute.value) for attribute in span.attributes},
            status=STATUSES[span.status.code],
            scope=scoped.scope.name,
        )
        for resource in request.resource_spans
        for scoped in resource.scope_spans
        for span in scoped.spans
    ]


class OtlpReceiver:
    """Receives spans over OTLP/HTTP on a free port of 127.0.0.1 (`endpoint`), from any number of processes."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        lock = threading.Lock()
        received = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                spans = decoded(body) if self.path == "/v1/traces" else []
                with lock:
                    received.extend(spans)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200 if self.path == "/v1/traces" else 404)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the test reads the spans, not the access log."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver", daemon=True)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
