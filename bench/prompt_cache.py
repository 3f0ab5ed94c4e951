"""Model-token cost of a 10-iteration run on Bedrock, with and without prompt caching.

The run goes through the local engine against the loopback Bedrock endpoint of the tests
(tests/support/aws_loopback.py), which counts each request's tokens as Bedrock bills them: a prefix closed
by a `cachePoint` and seen before is a cache read, a new one a cache write, the rest plain input. The model
is Claude Haiku 4.5 through a global profile, priced from the model catalog; the profile's system prompt
is about 5,000 tokens (an agent's instructions), and the model calls a tool nine times before it answers.
"Without" is the same run with the catalog entry's `prompt_cache` removed (a configuration override).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from stepwise.config.model_catalog import packaged_catalog
from stepwise.local.environment import LocalEnvironment
from stepwise.models.run import RunMeta
from tests.support.aws_loopback import AwsLoopback, converse_reply

MODEL_ID = "global.anthropic.claude-haiku-4-5-20251001-v1:0"
ITERATIONS = 10
INSTRUCTIONS = (
    "You are the operations assistant of a logistics company. Check every figure with a tool before you "
    "state it, say which tool gave it, and keep answers short. "
) * 130


def _config(cached: bool) -> dict[str, Any]:
    entry = packaged_catalog().lookup(MODEL_ID)
    assert entry is not None
    overrides = [] if cached else [entry.model_copy(update={"prompt_cache": None}).model_dump(mode="json")]
    return {
        "models": {"haiku": {"provider": "bedrock", "model_id": MODEL_ID, "capabilities": {"native_tools": True}}},
        "tools": {"builtin": ["current_time"]},
        "profiles": {
            "default": {
                "model": "haiku",
                "strategy": "function_calling",
                "system_prompt": INSTRUCTIONS,
                "tools": ["current_time"],
                "limits": {"max_iterations": ITERATIONS + 1},
            }
        },
        "model_catalog": overrides,
    }


@contextmanager
def _environment_variables(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def measure(cached: bool) -> RunMeta:
    """One 10-iteration run against the counting loopback; its META, with usage and cost."""
    with AwsLoopback(count_usage=True) as bedrock, tempfile.TemporaryDirectory() as folder:
        calls = [converse_reply(tool_uses=[{"name": "current_time", "input": {}}])] * (ITERATIONS - 1)
        bedrock.enqueue_converse(*calls, converse_reply(text="Every figure checked."))
        (Path(folder) / "stepwise.yaml").write_text(yaml.safe_dump(_config(cached)), encoding="utf-8")
        # the loopback checks no signature: placeholder keys, the endpoint through the SDK's own variable
        identity = {
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": bedrock.url,
            "AWS_ACCESS_KEY_ID": "AKIABENCHEXAMPLE0001",
            "AWS_SECRET_ACCESS_KEY": "bench-secret",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        with (
            _environment_variables(identity),
            LocalEnvironment(config_dir=Path(folder), retry_interval_scale=0.0) as env,
        ):
            meta, _ = env.ask("Check the delivery times for today.")
    return meta


def main() -> None:
    """Print the table."""
    rows = [("without prompt caching", measure(cached=False)), ("with prompt caching", measure(cached=True))]
    print(f"Model tokens of a {ITERATIONS}-iteration run ({MODEL_ID}, catalog prices, USD)")
    print(f"{'':<24}{'input':>9}{'cache read':>12}{'cache write':>13}{'output':>8}{'cost/run':>11}{'per 1,000':>11}")
    for label, meta in rows:
        usage = meta.usage
        cost = usage.cost_usd or 0.0
        print(
            f"{label:<24}{usage.input_tokens:>9,}{usage.cache_read_tokens:>12,}{usage.cache_write_tokens:>13,}"
            f"{usage.output_tokens:>8,}{cost:>11.5f}{cost * 1000:>11.2f}"
        )
    without, cached = (meta.usage.cost_usd or 0.0 for _, meta in rows)
    if without:
        print(f"prompt caching saves {1 - cached / without:.0%} of the model-token cost of this run")


if __name__ == "__main__":
    main()
