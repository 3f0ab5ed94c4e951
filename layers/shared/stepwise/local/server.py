"""`stepwise serve`: the HTTP API on 127.0.0.1, through the same handler API Gateway calls on AWS.

Each HTTP request becomes an API Gateway REST (v1) proxy event (`api_gateway.py`) and is given to
`ApiFunction` of `template.yaml`; the handler's response is written back as API Gateway would. The HTTP
front (`http_front.py`: uvicorn, with body, time and worker limits, and a hook for streamed answers)
serves it. Runs start through a local Step Functions endpoint and execute in the local engine in the
background, on the store the command was given (DynamoDB Local on disk by default).

As on Lambda, an instance of the handler (its module, with its Powertools resolver and clients)
handles one request at a time: a request takes an idle instance or loads a new one (a cold start), up
to a limit. Chat completions, which wait for their run, have instances and workers of their own.
On start, runs the store still holds open are resumed (`run_recovery.py`); on stop, steps in flight
finish and their runs stay open for the next start.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import sys
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from stepwise.errors import UsageError
from stepwise.interop.registry import protocol_apps
from stepwise.local.api_gateway import (
    DEFAULT_MAX_API_INSTANCES,
    LOCAL_ACCOUNT,
    LOCAL_REGION,
    FunctionInstances,
    api_gateway_event,
)
from stepwise.local.defaults import PROJECT_ROOT
from stepwise.local.environment import LocalEnvironment
from stepwise.local.example_api import ExampleToolApi
from stepwise.local.front_answers import chat_is_waiting
from stepwise.local.http_front import ApiFront, FrontLimits, StreamRoute, bound_listener
from stepwise.local.lambda_runtime import LocalLambdaInvoker, unload_handlers
from stepwise.local.run_recovery import Recovery
from stepwise.local.stepfunctions_endpoint import DEFAULT_MAX_CONCURRENT_EXECUTIONS, StepFunctionsEndpoint
from stepwise.local.store_options import add_store_arguments, serve_store
from stepwise.local.template import SamTemplate
from stepwise.local.whole_numbers import whole_number
from stepwise.streaming.routes import chat_stream_route, events_stream_route
from stepwise.streaming.slots import StreamSlots

__all__ = ["FunctionInstances", "LocalApi", "add_serve_command", "api_gateway_event", "command_serve"]

API_FUNCTION = "ApiFunction"
# The keys `stepwise serve` accepts, comma-separated (besides `--api-key`).
API_KEYS_VARIABLE = "STEPWISE_API_KEYS"
DEFAULT_PORT = 8080
MAX_PORT = 65535
# Measured on 2 cores (docs/performance.md, "Where a burst's time goes"): the handlers' CPU on the other core.
DEFAULT_LAMBDA_WORKERS = 2


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
        front_limits: FrontLimits | None = None,
        stream_routes: list[StreamRoute] | None = None,
        lambda_workers: int = 0,
        resume_open_runs: bool = True,
        accepted_keys: frozenset[str] = frozenset(),
        listener: socket.socket | None = None,
    ) -> None:
        """`listener`: a socket bound to `port` already (`bound_listener`), held by the caller since before the
        store started; without it, `port` is bound first thing on entering, before the services inside start."""
        self._listener = listener
        self._config_dir = config_dir
        self._config_file = config_file
        self._port = port
        self._dynamodb_endpoint_url = dynamodb_endpoint_url
        self._table_name = table_name
        self._project_root = project_root
        self._retry_interval_scale = retry_interval_scale
        self._max_api_instances = max_api_instances
        self._workflow_type = workflow_type
        self._lambda_workers = lambda_workers
        self._resume_open_runs = resume_open_runs
        self._accepted_keys = accepted_keys
        self._example_api = ExampleToolApi() if demo else None
        self._endpoint = StepFunctionsEndpoint(max_concurrent_executions=max_concurrent_executions)
        self._front_limits = front_limits
        self._stream_routes = stream_routes or []
        self._front: ApiFront | None = None
        self.environment: LocalEnvironment
        self.recovery = Recovery()
        self.drained = True
        # every API instance's handler modules are loaded under this prefix, forgotten on exit
        self._api_module_prefix = f"stepwise_api_{uuid.uuid4().hex[:8]}_"

    @property
    def url(self) -> str:
        """The API's base URL, e.g. ``http://127.0.0.1:8080``."""
        if self._front is None:
            raise RuntimeError("the local API is not started")
        return self._front.url

    def __enter__(self) -> LocalApi:
        # the front's port is held before anything inside starts on a free port, which could otherwise be given it
        listener = self._listener or bound_listener(self._port)
        try:
            self._enter_stack()
        except BaseException:
            listener.close()
            raise
        template = self.environment.template

        def instance() -> LocalLambdaInvoker:
            return LocalLambdaInvoker(template, module_prefix=f"{self._api_module_prefix}{uuid.uuid4().hex[:8]}_")

        def instances() -> FunctionInstances:
            return FunctionInstances(API_FUNCTION, instance(), instance, max_instances=self._max_api_instances)

        limits = self._front_limits or FrontLimits(
            max_body_bytes=self.environment.runtime.config.api.max_body_bytes,
            workers=self._max_api_instances,
            waiting_workers=self._max_api_instances,
        )
        slots = StreamSlots(total=limits.max_streams, per_owner=limits.max_streams_per_owner)
        try:
            self._front = ApiFront(
                instances().invoke,
                listener=listener,
                limits=limits,
                waiting_handler=instances().invoke,
                waiting_route=chat_is_waiting,
                stream_routes=[
                    *self._stream_routes,
                    events_stream_route(self.environment.runtime, slots),
                    chat_stream_route(self.environment.runtime, instances().invoke, slots),
                ],
                protocol_apps=protocol_apps(lambda: self.environment.runtime.config),
                accepted_keys=self._accepted_keys,
            ).start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _enter_stack(self) -> None:
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
            lambda_workers=self._lambda_workers,
        )
        try:
            self.environment.__enter__()
        except BaseException:
            self._stop_services()
            raise
        if self.environment.state_machine.arn != state_machine_arn:
            self.__exit__(None, None, None)
            raise RuntimeError(f"the local engine serves {self.environment.state_machine.arn}, not {state_machine_arn}")
        self._endpoint.attach(self.environment.state_machine, on_end=self.environment.execution_ended)
        if self._resume_open_runs:
            self.recovery = self.environment.recover_open_runs(self._endpoint.resume_execution)

    def _stop_services(self) -> None:
        self._endpoint.stop()
        self._stop_example_api()

    def _stop_example_api(self) -> None:
        if self._example_api is not None:
            self._example_api.stop()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._front is not None:
            self._front.stop()
            self._front = None
        # Runs in flight finish the step they are in before the store goes away, and stay open in the
        # store; the next start resumes them.
        self.drained = self._endpoint.stop()
        unload_handlers(self._api_module_prefix)
        self.environment.__exit__(exc_type, exc, traceback)
        # the endpoint is stopped above, before the environment it calls goes away
        self._stop_example_api()


def add_serve_command(subparsers: Any) -> None:
    """Register `stepwise serve` on the CLI's subcommands."""
    serve = subparsers.add_parser("serve", help="serve the HTTP API on 127.0.0.1, as API Gateway does")
    serve.add_argument(
        "--port",
        type=whole_number(0, MAX_PORT),
        default=DEFAULT_PORT,
        help=f"port on 127.0.0.1 (default {DEFAULT_PORT})",
    )
    serve.add_argument("--demo", action="store_true", help="serve config/demo.yaml with the example tool API")
    serve.add_argument("--config", default=str(PROJECT_ROOT / "config" / "stepwise.yaml"))
    add_store_arguments(serve)
    serve.add_argument(
        "--workflow-type",
        choices=["STANDARD", "EXPRESS"],
        default="STANDARD",
        help="as the template parameter: EXPRESS makes chat completions use StartSyncExecution",
    )
    serve.add_argument(
        "--workers",
        type=whole_number(0),
        default=DEFAULT_LAMBDA_WORKERS,
        help="processes that run the state machine's Lambda invocations, as Lambda's containers do; "
        f"0 runs them in the server's own process (default {DEFAULT_LAMBDA_WORKERS})",
    )
    serve.add_argument(
        "--api-key",
        action="append",
        default=[],
        metavar="KEY",
        help=f"accept only this API key (repeatable; also ${API_KEYS_VARIABLE}, comma-separated): any other key "
        "is answered 401 on every route, as a deployed stack's usage plan refuses it; without either, any key "
        "is accepted and is its caller's identity",
    )
    serve.set_defaults(handler=command_serve)


def accepted_keys(given: list[str], environ: Mapping[str, str]) -> frozenset[str]:
    """The keys `stepwise serve` accepts: those of `--api-key` and of `STEPWISE_API_KEYS` (empty: any key)."""
    listed = [key.strip() for key in environ.get(API_KEYS_VARIABLE, "").split(",")]
    return frozenset(key for key in [*given, *listed] if key)


def reserve_port(port: int) -> socket.socket:
    """The front's socket, bound now (before the store and the engine start, so that neither is given the port);
    fails at once, in one line, when the port is taken."""
    try:
        return bound_listener(port)
    except OSError as exc:
        raise UsageError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}; pass --port N") from None


def warn_if_no_model(config_path: Path) -> None:
    """Say on stderr, before anything starts, when the configured model cannot be reached.

    Unlike `stepwise run`, serve starts anyway: the model may come up later, and runs can be read and
    cancelled meanwhile; but a newcomer's first run would otherwise spend its retries in silence.
    """
    from stepwise.config.model_reach import unreachable_model_in

    reason = unreachable_model_in(config_path)
    if reason is not None:
        print(f"stepwise serve: warning: {reason}", file=sys.stderr, flush=True)


def command_serve(args: argparse.Namespace, out: TextIO) -> int:
    """Serve until SIGTERM or SIGINT (Ctrl-C), then stop taking requests and let steps in flight finish."""
    listener = reserve_port(args.port)
    if args.demo:
        config_dir, config_file = PROJECT_ROOT / "config", "demo.yaml"
    else:
        config_path = Path(args.config).resolve()
        config_dir, config_file = config_path.parent, config_path.name
        warn_if_no_model(config_path)
    keys = accepted_keys(args.api_key, os.environ)
    # the listener is the front's once it starts (closing it twice is harmless); closed here if nothing got so far
    with (
        contextlib.closing(listener),
        serve_store(args) as store,
        LocalApi(
            config_dir=config_dir,
            config_file=config_file,
            port=args.port,
            demo=args.demo,
            dynamodb_endpoint_url=store.endpoint_url,
            table_name=args.table_name,
            workflow_type=args.workflow_type,
            lambda_workers=args.workers,
            # a run another command is executing is open too: resumed only when no other command shares the store
            resume_open_runs=store.others == 0,
            accepted_keys=keys,
            listener=listener,
        ) as stack,
    ):
        store.open_gate()
        if store.others:
            print(
                f"stepwise serve: {store.others} other stepwise command(s) use this store: runs left open are "
                "resumed by a serve that starts alone on it",
                file=sys.stderr,
            )
        # installed before the banner: whoever reads it may signal at once
        stopping = stop_signal_event()
        example_key = "<one of your keys>" if keys else "me"
        print(f"stepwise serve: {stack.url} · config {config_dir / config_file} · Ctrl-C stops", file=out)
        print(
            f"  curl -s -X POST {stack.url}/v1/runs -H 'x-api-key: {example_key}' "
            "-H 'content-type: application/json' "
            """-d '{"input": "What is the weather in Paris?"}'""",
            file=out,
        )
        print(f"  MCP: {stack.url}/mcp (each profile a tool; the same key)", file=out, flush=True)
        if stack.recovery.resumed or stack.recovery.timed_out:
            print(
                f"resumed {len(stack.recovery.resumed)} open run(s); ended {len(stack.recovery.timed_out)} "
                "past their deadline (TIMED_OUT)",
                file=sys.stderr,
            )
        while not stopping.wait(0.5):
            pass
        print("stopping: no new requests; steps in flight finish, open runs resume at the next start", file=sys.stderr)
    if not stack.drained:
        # a step still running past the drain bound is abandoned; its run resumes at the next start
        sys.stderr.flush()
        os._exit(0)
    return 0


def stop_signal_event() -> threading.Event:
    """An event set by SIGTERM or SIGINT (Ctrl-C), whose handlers this installs."""
    stopping = threading.Event()
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signal_number, lambda *_: stopping.set())
    return stopping
