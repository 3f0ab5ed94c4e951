"""`stepwise serve`: the HTTP API on 127.0.0.1, through the same handler API Gateway calls on AWS.

Each HTTP request becomes an API Gateway REST (v1) proxy event and is given to `ApiFunction` of
`template.yaml`; the handler's response is written back as API Gateway would. The `x-api-key` header
(or `Authorization: Bearer`, as OpenAI clients send it) stands for the API key: its value is the
caller's key id, so two keys are two owners. Runs start
through a local Step Functions endpoint and execute in the local engine in the background, on the
embedded DynamoDB unless another endpoint is given.

Requests are served concurrently. As on Lambda, an instance of the handler (its module, with its
Powertools resolver and clients) handles one request at a time: a request takes an idle instance or
loads a new one (a cold start), up to a limit. A streamed chat completion is written in one piece, as
API Gateway (REST) buffers responses too.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, TextIO
from urllib.parse import parse_qsl, unquote, urlsplit

from stepwise.local.defaults import PROJECT_ROOT
from stepwise.local.environment import LocalEnvironment
from stepwise.local.example_api import ExampleToolApi
from stepwise.local.lambda_runtime import LocalLambdaInvoker
from stepwise.local.stepfunctions_endpoint import DEFAULT_MAX_CONCURRENT_EXECUTIONS, StepFunctionsEndpoint
from stepwise.local.store_options import add_store_arguments, store_endpoint
from stepwise.local.template import SamTemplate
from stepwise.observability import logger
from stepwise.steps.api import ROUTES
from stepwise.steps.api.caller_key import presented_api_key

API_FUNCTION = "ApiFunction"
DEFAULT_PORT = 8080
DEFAULT_MAX_API_INSTANCES = 8
LOCAL_STAGE = "local"
# The account and region the local engine puts in its ARNs.
LOCAL_ACCOUNT = "000000000000"
LOCAL_REGION = "us-east-1"

ApiInvoker = Callable[[dict[str, Any]], Any]


class FunctionInvoker(Protocol):
    """What `LocalLambdaInvoker` offers: invoke a function of the template by logical id."""

    def invoke(self, logical_id: str, event: Any) -> Any:
        """Invoke the function `logical_id` with `event`."""
        ...


def _resource_pattern(resource: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(resource)) + "$")


_RESOURCES = [(resource, _resource_pattern(resource)) for resource in dict.fromkeys(path for _, path in ROUTES)]


def _group(pairs: list[tuple[str, str]]) -> tuple[dict[str, str] | None, dict[str, list[str]] | None]:
    """API Gateway's two views of repeated names: the last value of each, and all values of each."""
    if not pairs:
        return None, None
    multi: dict[str, list[str]] = {}
    for name, value in pairs:
        multi.setdefault(name, []).append(value)
    return {name: values[-1] for name, values in multi.items()}, multi


def api_gateway_event(
    *, method: str, target: str, headers: list[tuple[str, str]], body: bytes, host: str, source_ip: str
) -> dict[str, Any]:
    """The API Gateway REST proxy event for one HTTP request (`target` is the path with its query)."""
    split = urlsplit(target)
    path = unquote(split.path) or "/"
    resource, path_parameters = path, None
    for candidate, pattern in _RESOURCES:
        match = pattern.match(path)
        if match:
            resource, path_parameters = candidate, match.groupdict() or None
            break
    single_headers, multi_headers = _group(headers)
    query, multi_query = _group(parse_qsl(split.query, keep_blank_values=True))
    api_key = presented_api_key(headers)
    identity: dict[str, Any] = {"sourceIp": source_ip, "userAgent": (single_headers or {}).get("User-Agent")}
    if api_key:
        identity |= {"apiKey": api_key, "apiKeyId": api_key}
    try:
        text, encoded = (body.decode("utf-8"), False) if body else (None, False)
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode("ascii"), True
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": single_headers,
        "multiValueHeaders": multi_headers,
        "queryStringParameters": query,
        "multiValueQueryStringParameters": multi_query,
        "pathParameters": path_parameters,
        "stageVariables": None,
        "requestContext": {
            "accountId": LOCAL_ACCOUNT,
            "apiId": "local",
            "domainName": host,
            "httpMethod": method,
            "identity": identity,
            "path": path,
            "protocol": "HTTP/1.1",
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "resourcePath": resource,
            "stage": LOCAL_STAGE,
        },
        "body": text,
        "isBase64Encoded": encoded,
    }


class FunctionInstances:
    """Warm instances of one function, each handling one request at a time, as Lambda's environments do.

    `first` is used first; `new_instance` loads another copy of the handler when all are busy, up to
    `max_instances`; past that a request waits for an instance to be free.
    """

    def __init__(
        self,
        logical_id: str,
        first: FunctionInvoker,
        new_instance: Callable[[], FunctionInvoker],
        *,
        max_instances: int = DEFAULT_MAX_API_INSTANCES,
    ) -> None:
        self._logical_id = logical_id
        self._idle = [first]
        self._new_instance = new_instance
        self._count = 1
        self._max = max_instances
        self._available = threading.Condition()

    def _acquire(self) -> FunctionInvoker:
        with self._available:
            while not self._idle and self._count >= self._max:
                self._available.wait()
            if self._idle:
                return self._idle.pop()
            self._count += 1
        return self._new_instance()

    def invoke(self, event: dict[str, Any]) -> Any:
        """Invoke the function with `event` on a free instance."""
        instance = self._acquire()
        try:
            return instance.invoke(self._logical_id, event)
        finally:
            with self._available:
                self._idle.append(instance)
                self._available.notify()


class _ApiServer(ThreadingHTTPServer):
    daemon_threads = True
    # Bursts of concurrent clients must queue, not be reset (the default backlog is 5).
    request_queue_size = 128

    def __init__(self, port: int, invoke: ApiInvoker) -> None:
        super().__init__(("127.0.0.1", port), _ApiRequestHandler)
        self.invoke = invoke


class _ApiRequestHandler(BaseHTTPRequestHandler):
    server: _ApiServer

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        host, port = self.server.server_address[:2]
        event = api_gateway_event(
            method=self.command,
            target=self.path,
            headers=list(self.headers.items()),
            body=body,
            host=f"{host!s}:{port}",
            source_ip=self.client_address[0],
        )
        try:
            response = self.server.invoke(event)
        except Exception:  # what API Gateway answers when the function itself fails
            logger.exception("the API function failed", extra={"path": event["path"]})
            response = {"statusCode": 502, "body": json.dumps({"message": "Internal server error"})}
        self._write(response if isinstance(response, dict) else {"statusCode": 502, "body": ""})

    def _write(self, response: dict[str, Any]) -> None:
        raw = response.get("body") or ""
        payload = base64.b64decode(raw) if response.get("isBase64Encoded") else str(raw).encode("utf-8")
        headers: dict[str, list[str]] = {name: [str(value)] for name, value in (response.get("headers") or {}).items()}
        for name, values in (response.get("multiValueHeaders") or {}).items():
            headers[name] = [str(value) for value in values]
        try:
            self.send_response(int(response.get("statusCode", 502)))
            for name, values in headers.items():
                if name.lower() != "content-length":
                    for value in values:
                        self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            return

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: requests may carry prompts, and are not logged."""


class LocalApi:
    """The whole local stack behind `stepwise serve`: API server, Step Functions endpoint, engine, store.

    With `demo`, the example tool API is started too and `config/demo.yaml` is served.
    """

    def __init__(
        self,
        *,
        config_dir: Path,
        config_file: str = "stepwise.yaml",
        port: int = 0,
        demo: bool = False,
        dynamodb_endpoint_url: str | None = None,
        table_name: str | None = None,
        project_root: Path = PROJECT_ROOT,
        retry_interval_scale: float = 1.0,
        max_concurrent_executions: int = DEFAULT_MAX_CONCURRENT_EXECUTIONS,
        max_api_instances: int = DEFAULT_MAX_API_INSTANCES,
        workflow_type: str = "STANDARD",
    ) -> None:
        self._config_dir = config_dir
        self._config_file = config_file
        self._port = port
        self._dynamodb_endpoint_url = dynamodb_endpoint_url
        self._table_name = table_name
        self._project_root = project_root
        self._retry_interval_scale = retry_interval_scale
        self._max_api_instances = max_api_instances
        self._workflow_type = workflow_type
        self._example_api = ExampleToolApi() if demo else None
        self._endpoint = StepFunctionsEndpoint(max_concurrent_executions=max_concurrent_executions)
        self._server: _ApiServer | None = None
        self.environment: LocalEnvironment

    @property
    def url(self) -> str:
        """The API's base URL, e.g. ``http://127.0.0.1:8080``."""
        if self._server is None:
            raise RuntimeError("the local API is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> LocalApi:
        machine = SamTemplate.load(self._project_root / "template.yaml").state_machine()
        # The handler reads STATE_MACHINE_ARN at import; the engine names its machine the same way.
        state_machine_arn = f"arn:aws:states:{LOCAL_REGION}:{LOCAL_ACCOUNT}:stateMachine:{machine.logical_id}"
        extra_environment = {
            "STATE_MACHINE_ARN": state_machine_arn,
            "STEPFUNCTIONS_ENDPOINT_URL": self._endpoint.start().url,
            "WORKFLOW_TYPE": self._workflow_type,
        }
        if self._example_api is not None:
            extra_environment["STEPWISE_EXAMPLE_API_URL"] = self._example_api.start().url
        self.environment = LocalEnvironment(
            config_dir=self._config_dir,
            config_file=self._config_file,
            project_root=self._project_root,
            dynamodb_endpoint_url=self._dynamodb_endpoint_url,
            table_name=self._table_name,
            retry_interval_scale=self._retry_interval_scale,
            extra_environment=extra_environment,
        )
        try:
            self.environment.__enter__()
        except BaseException:
            self._stop_services()
            raise
        if self.environment.state_machine.arn != state_machine_arn:
            self.__exit__(None, None, None)
            raise RuntimeError(f"the local engine serves {self.environment.state_machine.arn}, not {state_machine_arn}")
        self._endpoint.attach(self.environment.state_machine)
        template = self.environment.template
        instances = FunctionInstances(
            API_FUNCTION,
            self.environment.invoker,
            lambda: LocalLambdaInvoker(template, module_prefix=f"stepwise_api_{uuid.uuid4().hex[:8]}_"),
            max_instances=self._max_api_instances,
        )
        self._server = _ApiServer(self._port, instances.invoke)
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="stepwise-api", daemon=True
        ).start()
        return self

    def _stop_services(self) -> None:
        self._endpoint.stop()
        if self._example_api is not None:
            self._example_api.stop()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        # Runs still executing finish before the store they write to goes away.
        self._endpoint.stop()
        self.environment.__exit__(exc_type, exc, traceback)
        self._stop_services()


def add_serve_command(subparsers: Any) -> None:
    """Register `stepwise serve` on the CLI's subcommands."""
    serve = subparsers.add_parser("serve", help="serve the HTTP API on 127.0.0.1, as API Gateway does")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT})")
    serve.add_argument("--demo", action="store_true", help="serve config/demo.yaml with the example tool API")
    serve.add_argument("--config", default=str(PROJECT_ROOT / "config" / "stepwise.yaml"))
    add_store_arguments(serve)
    serve.add_argument(
        "--workflow-type",
        choices=["STANDARD", "EXPRESS"],
        default="STANDARD",
        help="as the template parameter: EXPRESS makes chat completions use StartSyncExecution",
    )
    serve.set_defaults(handler=command_serve)


def command_serve(args: argparse.Namespace, out: TextIO) -> int:
    """Serve until interrupted (Ctrl-C)."""
    if args.demo:
        config_dir, config_file = PROJECT_ROOT / "config", "demo.yaml"
    else:
        config_path = Path(args.config).resolve()
        config_dir, config_file = config_path.parent, config_path.name
    with (
        store_endpoint(args) as endpoint_url,
        LocalApi(
            config_dir=config_dir,
            config_file=config_file,
            port=args.port,
            demo=args.demo,
            dynamodb_endpoint_url=endpoint_url,
            table_name=args.table_name,
            workflow_type=args.workflow_type,
        ) as stack,
    ):
        print(f"stepwise serve: {stack.url} · config {config_dir / config_file} · Ctrl-C stops", file=out)
        print(
            f"  curl -s -X POST {stack.url}/v1/runs -H 'x-api-key: me' -H 'content-type: application/json' "
            """-d '{"input": "What is the weather in Paris?"}'""",
            file=out,
            flush=True,
        )
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print("stopped", file=out)
    return 0
