"""Everything a local run needs, wired as on AWS: store endpoint, environment, handlers and the engine.

The store is the DynamoDB endpoint given (the CLI gives DynamoDB Local on disk, or the user's
`--dynamodb-endpoint`) and one fixed table in it, so a restart finds every run; without an endpoint,
an in-memory moto server is started (the tests' fast default) with a table of its own, gone with the
environment.

Handlers read their settings from environment variables once, at import, as in Lambda; this module
sets those variables for the process before it loads them, so one process hosts one environment at a
time.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from botocore.exceptions import ClientError
from pydantic import ValidationError

from stepwise.config.settings import Settings
from stepwise.inputs.validation_problems import reasons_of
from stepwise.intent import extract_question, route_profile
from stepwise.local.api_gateway import LOCAL_ACCOUNT, LOCAL_REGION
from stepwise.local.asl import ExecutionResult, LocalStateMachine, StateEvent
from stepwise.local.ast_guard import serialise_ast_parsing
from stepwise.local.defaults import DEFAULT_TABLE_NAME, PROJECT_ROOT, local_environment
from stepwise.local.embedded_dynamodb import EmbeddedDynamoDB, create_table_from_template
from stepwise.local.execution_events import ExecutionEndPublisher, execution_rules
from stepwise.local.lambda_runtime import LocalLambdaInvoker
from stepwise.local.lambda_workers import LambdaWorkers
from stepwise.local.run_recovery import Recovery, recover_open_runs
from stepwise.local.stepfunctions_endpoint import StepFunctionsEndpoint
from stepwise.local.template import SamTemplate
from stepwise.models.api_requests import RunRequest
from stepwise.models.messages import ChatMessage
from stepwise.models.run import IntentOutcome, RunMeta, RunOptions
from stepwise.steps.api.problems import InvalidRequest
from stepwise.steps.api.runs import plan_run
from stepwise.steps.api.services import build_intent_classifier
from stepwise.steps.run_outcomes import record_cancellation
from stepwise.steps.runs import create_run, execution_input
from stepwise.steps.runtime import StepRuntime, dynamodb_client
from stepwise.store import RunAlreadyEnded
from stepwise.telemetry.observability import metrics


def check_question(question: str) -> None:
    """`InvalidRequest` for a question `POST /v1/runs` would refuse (an empty one): the API's own check of a
    request, which a command may apply before it starts a store."""
    try:
        RunRequest.model_validate({"input": question})
    except ValidationError as exc:
        raise InvalidRequest.of("question", reasons_of(exc)) from None


class LocalEnvironment:
    """The template's functions and state machine over a local DynamoDB endpoint, runnable in-process."""

    def __init__(
        self,
        *,
        config_dir: Path,
        config_file: str = "stepwise.yaml",
        project_root: Path = PROJECT_ROOT,
        dynamodb_endpoint_url: str | None = None,
        table_name: str | None = None,
        retry_interval_scale: float = 1.0,
        listener: Callable[[StateEvent], None] | None = None,
        extra_environment: Mapping[str, str] | None = None,
        lambda_workers: int = 0,
    ) -> None:
        self.project_root = project_root
        self.template = SamTemplate.load(project_root / "template.yaml")
        self._config_dir = config_dir
        self._config_file = config_file
        self._endpoint = dynamodb_endpoint_url
        self._embedded: EmbeddedDynamoDB | None = None
        self._retry_interval_scale = retry_interval_scale
        self._listener = listener
        self._extra_environment = dict(extra_environment or {})
        self._saved_environment: dict[str, str | None] = {}
        self._worker_count = lambda_workers
        # With workers, the engine's invocations run in their processes (`lambda_workers.py`); without, here.
        self.workers: LambdaWorkers | None = None
        # the endpoint child runs are started through, when the configuration delegates and none was given
        self._child_runs: StepFunctionsEndpoint | None = None
        # moto's backend is global to the process: an in-memory store gets a table of its own by default
        default_name = DEFAULT_TABLE_NAME if dynamodb_endpoint_url else f"stepwise-memory-{uuid.uuid4().hex[:8]}"
        self.table_name = table_name or default_name
        self.runtime: StepRuntime
        self.dynamodb: Any
        self.invoker: LocalLambdaInvoker
        self.state_machine: LocalStateMachine
        self._publisher: ExecutionEndPublisher

    def __enter__(self) -> LocalEnvironment:
        # the handlers run on many threads of this one process, where Lambda gives each its own
        serialise_ast_parsing()
        if self._endpoint is None:
            self._embedded = EmbeddedDynamoDB().start()
            self._endpoint = self._embedded.endpoint_url
        environment = (
            local_environment(os.environ)
            | {
                "TABLE_NAME": self.table_name,
                "DYNAMODB_ENDPOINT_URL": self._endpoint,
                "STEPWISE_CONFIG_DIR": str(self._config_dir),
                "STEPWISE_CONFIG_FILE": self._config_file,
            }
            | self._extra_environment
        )
        for name, value in environment.items():
            self._saved_environment[name] = os.environ.get(name)
            os.environ[name] = value
        settings = Settings.from_environ(os.environ)
        self.dynamodb = dynamodb_client(settings)
        create_table_from_template(self.dynamodb, self.template, self.table_name)
        self.runtime = StepRuntime.from_settings(settings)
        try:
            # A Lambda reads its configuration on first use; a local command refuses a bad one before it
            # starts anything, with the one-line ConfigError.
            self.runtime.config  # noqa: B018
        except BaseException:
            self.__exit__(None, None, None)
            raise
        if "STEPFUNCTIONS_ENDPOINT_URL" not in self._extra_environment and any(
            profile.agents for profile in self.runtime.config.profiles.values()
        ):
            self._serve_child_runs()
        self.invoker = LocalLambdaInvoker(self.template, module_prefix=f"stepwise_local_{uuid.uuid4().hex[:8]}_")
        if self._worker_count:
            # started once the environment is set: each worker inherits it
            self.workers = LambdaWorkers(self.project_root / "template.yaml", workers=self._worker_count).start()
        machine = self.template.state_machine()
        definition = self.template.render_definition(machine, self._resolve_reference)
        self.state_machine = LocalStateMachine(
            definition,
            self.invoke,
            name=machine.logical_id,
            retry_interval_scale=self._retry_interval_scale,
            listener=self._listener,
            # both of `invoke`'s ways send the payload through JSON
            invoker_copies=True,
        )
        if self._child_runs is not None:
            self._child_runs.attach(self.state_machine, on_end=self.execution_ended)
        self._publisher = ExecutionEndPublisher(
            execution_rules(self.template, {machine.logical_id: self.state_machine.arn}),
            self.invoke,
            state_machine_arn=self.state_machine.arn,
        )
        return self

    def _serve_child_runs(self) -> None:
        """A Step Functions endpoint for the child runs of a configuration that delegates to agents, as
        `stepwise serve` has one (`stepwise run`, `eval` and `demo` run their own execution in this engine; a
        child's execution is started through the endpoint, and its end answers the parent's task token there)."""
        self._child_runs = StepFunctionsEndpoint().start()
        machine = self.template.state_machine()
        for name, value in {
            "STEPFUNCTIONS_ENDPOINT_URL": self._child_runs.url,
            "STATE_MACHINE_ARN": f"arn:aws:states:{LOCAL_REGION}:{LOCAL_ACCOUNT}:stateMachine:{machine.logical_id}",
        }.items():
            self._saved_environment.setdefault(name, os.environ.get(name))
            os.environ[name] = value
        # the environment's own steps (a cancellation's, its children's) reach the endpoint too
        self.runtime = StepRuntime.from_settings(Settings.from_environ(os.environ))

    def invoke(self, function_name: str, payload: Any) -> Any:
        """Invoke a function (logical id or ARN) as Lambda would: in a worker process, or in this one."""
        if self.workers is not None:
            return self.workers(function_name, payload)
        try:
            return self.invoker(function_name, payload)
        finally:
            # With metrics disabled (the local default) Powertools keeps them until 100 pile up and then
            # prints them anyway. An invocation's own are dropped when it ends (`invocation_metrics`); this drops
            # those the engine's own code added outside any (a cancellation's).
            metrics.clear_metrics()

    def execution_ended(self, result: ExecutionResult, input_text: str) -> None:
        """Deliver an ended execution's status change to the template's matching rules, as EventBridge does."""
        self._publisher(result, input_text)

    def _resolve_reference(self, value: Any) -> str:
        # text chosen on the workflow type (the wait for approval), as CloudFormation would choose it
        literal = self.template.literal_substitution(
            value, {"WorkflowType": os.environ.get("WORKFLOW_TYPE", "STANDARD")}
        )
        if literal is not None:
            return literal
        logical_id = self.template.function_for_reference(value)
        if logical_id is None:
            raise ValueError(f"definition substitution {value!r} does not name a function of template.yaml")
        return self.invoker.function_arn(logical_id)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._child_runs is not None:
            # the children still running finish the state they are in, as a stopping serve lets them
            self._child_runs.stop()
        if self.workers is not None:
            self.workers.stop()
        if hasattr(self, "invoker"):
            self.invoker.close()
        for name, value in self._saved_environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if self._embedded is not None:
            # moto keeps every table in its process-wide backend after its server stops: dropped here, or a
            # process that starts environments one after another (tests, evals) keeps every run it made
            if hasattr(self, "dynamodb"):
                with contextlib.suppress(ClientError):  # the table was never made: the start failed before
                    self.dynamodb.delete_table(TableName=self.table_name)
            self._embedded.stop()

    def create_run(
        self, question: str, *, profile: str | None = None, owner: str = "local", max_iterations: int | None = None
    ) -> RunMeta:
        """Store a new run for `question` under `profile` (the config's default when None)."""
        return create_run(
            self.runtime,
            messages=[ChatMessage(role="user", content=question)],
            owner=owner,
            profile=profile or self.runtime.config.default_profile,
            max_iterations=max_iterations,
        )

    def accept_question(
        self,
        question: str,
        *,
        profile: str | None = None,
        owner: str = "local",
        max_iterations: int | None = None,
        session_id: str | None = None,
        metadata: dict[str, str] | None = None,
        options: RunOptions | None = None,
    ) -> RunMeta:
        """Store a run for `question` as `POST /v1/runs` does: the API's checks (`InvalidRequest` for a
        question it would refuse), then the configured intent classification and routing table choose the
        profile (an explicit `profile` wins, as in the API).

        `max_iterations` is the CLI's own limit, which the HTTP API does not take; `session_id`, `metadata`
        and `options` (a response schema) are what the API's request would set.
        """
        config = self.runtime.config
        request_body = {"input": question}
        check_question(question)
        plan = plan_run(
            config,
            owner=owner,
            messages=[ChatMessage(role="user", content=question)],
            request_body=request_body,
            input_field="input",
            profile=profile,
            session_id=session_id,
            metadata=metadata,
            options=options,
        )
        intent: dict[str, str] = {}
        outcome: IntentOutcome | None = None
        classifier = build_intent_classifier(self.runtime)
        if classifier is not None and config.intent is not None:
            result = classifier.classify(extract_question(request_body, config.intent.key_from.request_body) or "")
            intent = result.values
            outcome = IntentOutcome(
                source=result.source, model=result.model, latency_ms=round(result.latency_ms, 1), error=result.error
            )
        return create_run(
            self.runtime,
            messages=plan.messages,
            owner=owner,
            profile=plan.profile or route_profile(intent, config.routes, config.default_profile),
            intent=intent,
            intent_outcome=outcome,
            max_iterations=max_iterations,
            session_id=plan.session_id,
            metadata=plan.metadata,
            options=plan.options,
        )

    def recover_open_runs(self, resume: Callable[[str, dict[str, Any]], None]) -> Recovery:
        """Hand each run the store still holds open to `resume(run_id, input)` (see `run_recovery`)."""
        return recover_open_runs(self.runtime, self.dynamodb, self.table_name, resume)

    def execute(self, run_id: str, *, from_iteration: int = 0, stop: threading.Event | None = None) -> ExecutionResult:
        """Run the state machine for an already created run, to its end (a forked replay from the iteration
        after the ones it kept); once `stop` is set, no state begins, the execution ends ABORTED and the run
        is recorded CANCELLED by its owner, as the API's cancel records it."""
        document = execution_input(run_id, from_iteration)
        result = self.state_machine.start_execution(run_id, document, stop=stop)
        if stop is not None and stop.is_set() and result.status == "ABORTED":
            with contextlib.suppress(RunAlreadyEnded):  # it ended on its own before the stop took effect
                meta = self.runtime.store.require_run(run_id)
                record_cancellation(meta, self.runtime, by=meta.owner)
        self.execution_ended(result, json.dumps(document))
        return result

    def ask(self, question: str, **options: Any) -> tuple[RunMeta, ExecutionResult]:
        """Create a run and execute it; returns the run as stored at the end and the execution."""
        meta = self.create_run(question, **options)
        result = self.execute(meta.run_id)
        return self.runtime.store.require_run(meta.run_id), result
