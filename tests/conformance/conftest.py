"""Fixtures for the conformance suite: one config, one store and the same handlers behind two engines.

The local engine runs as in `stepwise demo`: `LocalEnvironment` with its embedded DynamoDB endpoint.
moto's Step Functions interpreter runs the same definition, rendered with the ARNs of functions
created in moto's Lambda, which answer through the same handlers (see `moto_lambda.py`). Both sides'
handlers write to the embedded endpoint's table, so each run's stored outcome is read the same way.

moto's in-process mock and its threaded server share one set of backends, and `mock_aws()` clears
them when it starts: it is started first, and the embedded endpoint (with its table) after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID

from stepwise.local.environment import LocalEnvironment
from tests.conformance.engines import EnginePair, MotoStateMachine
from tests.conformance.moto_lambda import REGION, HandlerBackedLambda
from tests.e2e.conftest import write_config

__all__ = ["engine_pair", "write_config"]

_STATE_MACHINE_ROLE = f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/stepwise-conformance-state-machine"


@pytest.fixture
def engine_pair() -> Iterator[Callable[[Path], EnginePair]]:
    """Start both engines on a config dir (call once per test); everything stops after the test."""
    with ExitStack() as stack:

        def start(config_dir: Path) -> EnginePair:
            stack.enter_context(mock_aws(config={"stepfunctions": {"execute_state_machine": True}}))
            environment = stack.enter_context(LocalEnvironment(config_dir=config_dir, retry_interval_scale=0.0))
            functions = stack.enter_context(
                HandlerBackedLambda(
                    boto3.client("lambda", region_name=REGION),
                    boto3.client("iam", region_name=REGION),
                    environment.invoker,
                )
            )
            template = environment.template
            state_machine = template.state_machine()

            def function_arn(reference: object) -> str:
                literal = template.literal_substitution(reference, {"WorkflowType": "STANDARD"})
                if literal is not None:
                    return literal
                logical_id = template.function_for_reference(reference)
                if logical_id is None:
                    raise ValueError(f"definition substitution {reference!r} names no function of template.yaml")
                return functions.function_arns[logical_id]

            moto_machine = MotoStateMachine(
                boto3.client("stepfunctions", region_name=REGION),
                template.render_definition(state_machine, function_arn),
                role_arn=_STATE_MACHINE_ROLE,
                name=state_machine.logical_id,
            )
            return EnginePair(environment, moto_machine)

        yield start
