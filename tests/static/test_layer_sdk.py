"""The AWS SDK the Lambda layer pins knows the Converse blocks Stepwise sends.

The layer carries boto3 and botocore (layers/shared/requirements.txt) instead of the runtime's, because a
botocore whose bedrock-runtime service model lacks `cachePoint` or `reasoningContent` refuses such a request
before sending it ("request not sent"). The development environment is locked at the same versions, so the
installed botocore's service model is the one the layer ships.
"""

from __future__ import annotations

import re

import botocore
import botocore.session
from botocore.model import Shape, StructureShape

from tests.conftest import PROJECT_ROOT


def layer_pin(package: str) -> str:
    text = (PROJECT_ROOT / "layers" / "shared" / "requirements.txt").read_text(encoding="utf-8")
    match = re.search(rf"^{package}==(\S+)$", text, re.MULTILINE)
    assert match is not None, f"layers/shared/requirements.txt pins no {package}"
    return match.group(1)


def members(shape: Shape) -> set[str]:
    assert isinstance(shape, StructureShape), shape.name
    return set(shape.members)


def test_the_layer_pins_the_sdk_the_tests_run_with() -> None:
    # Given the layer's lock / When its botocore pin is read / Then it is the botocore installed here
    assert layer_pin("botocore") == botocore.__version__
    assert layer_pin("boto3")


def test_the_pinned_botocore_knows_cache_points_and_reasoning_in_converse() -> None:
    # Given the pinned botocore's bedrock-runtime service model
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    blocks = members(model.shape_for("ContentBlock"))
    system = members(model.shape_for("SystemContentBlock"))
    # When the Converse content blocks are read / Then cache points and reasoning are among them
    assert {"cachePoint", "reasoningContent"} <= set(blocks)
    assert "cachePoint" in system
