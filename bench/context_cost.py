"""What long runs send the model: tokens per run and the largest request, with and without compaction.

Runs of 10, 40 and 100 iterations through the local engine, each iteration a tool call returning 4 KB,
against a loopback OpenAI-compatible model that counts every request with its own tokenizer stand-in
(`tests/support/windowed_model.py`, about 4 bytes per token) and reports OpenAI-style prompt caching.
Three ways:

- `whole history`: Stepwise is not told the window (nothing is fitted or summarized) and the model takes
  any length, so every request resends the whole conversation, as before context management;
- `compaction`: the model's 32,000-token window is declared and enforced (a request over it is refused);
- the cached column: the part of the prompts the provider's prefix cache served (from 1,024 tokens, in
  steps of 128), which a provider with caching bills at its cache-read rate.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from stepwise.local.environment import LocalEnvironment
from tests.support.tool_server import Json, ScriptableToolServer
from tests.support.windowed_model import PageReader, WindowedModelServer, is_summary_request, page_text

SIZES = (10, 40, 100)
WINDOW = 32_000
OBSERVATION_CHARS = 4096
UNBOUNDED = 10**9


@dataclass(frozen=True)
class ContextFigures:
    """What one run sent the model, as the model counted it."""

    iterations: int
    mode: str
    status: str
    requests: int
    summary_requests: int
    tokens_sent: int
    largest_request: int
    cached_tokens: int
    compactions: int


def _config(model: WindowedModelServer, pages_url: str, iterations: int, *, declare_window: bool) -> dict[str, Any]:
    tool = {
        "toolName": "fetch_page",
        "description": "One page of the report.",
        "method": "GET",
        "path": "/pages/{page}",
        "parameter": {"type": "object", "properties": {"page": {"type": "integer"}}, "required": ["page"]},
    }
    entry: dict[str, Any] = {
        "provider": "openai",
        "base_url": model.base_url,
        "model": "windowed-model",
        "api_key": "sk-bench-context",
        "capabilities": {"native_tools": True},
    }
    if declare_window:
        entry["context_window"] = WINDOW
    return {
        "models": {"m": entry},
        "tools": {"apis": [{"url": pages_url, "internal": True, "tools": [tool]}], "builtin": []},
        "profiles": {
            "default": {
                "model": "m",
                "strategy": "function_calling",
                "limits": {
                    "max_iterations": iterations + 1,
                    "max_parallel_calls": 1,
                    "max_observation_chars": OBSERVATION_CHARS,
                },
            }
        },
    }


def measure_run(iterations: int, pages_url: str, *, compaction: bool) -> ContextFigures:
    """One run of `iterations` iterations (a page per iteration, then the answer), as the model counted it."""
    reader = PageReader(iterations - 1)
    window = WINDOW if compaction else UNBOUNDED
    with (
        WindowedModelServer(window=window, responder=reader, prompt_cache=True) as model,
        tempfile.TemporaryDirectory() as config_dir,
    ):
        config = _config(model, pages_url, iterations, declare_window=compaction)
        Path(config_dir, "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        with LocalEnvironment(config_dir=Path(config_dir), retry_interval_scale=0.0) as environment:
            meta, _ = environment.ask(f"Read the {iterations - 1} pages of report {iterations}.")
        exchanges = model.exchanges
    return ContextFigures(
        iterations=meta.iteration,
        mode="compaction" if compaction else "whole history",
        status=meta.status,
        requests=len(exchanges),
        summary_requests=sum(1 for exchange in exchanges if is_summary_request(exchange.body)),
        tokens_sent=sum(exchange.prompt_tokens for exchange in exchanges),
        largest_request=max(exchange.prompt_tokens for exchange in exchanges),
        cached_tokens=sum(exchange.cached_tokens for exchange in exchanges),
        compactions=meta.usage.compactions,
    )


def measure() -> list[ContextFigures]:
    """Every size, both ways."""
    with ScriptableToolServer() as pages:
        for page in range(1, max(SIZES) + 1):
            pages.on(f"/pages/{page}", Json({"page": page, "text": page_text(page, OBSERVATION_CHARS - 40)}))
        return [measure_run(size, pages.url, compaction=on) for size in SIZES for on in (False, True)]


def print_table(figures: list[ContextFigures]) -> None:
    """Print the table, and how tokens per iteration change with the run's length."""
    print(
        f"Context management: prompt tokens a run sends (4 KB observation per iteration, {WINDOW // 1000}k window; "
        "counted by the loopback model, summarizer calls included)"
    )
    print(
        "| iterations | mode | status | requests (summaries) | tokens sent | tokens/iteration | largest request "
        "| cached by the prompt cache | compactions |"
    )
    print("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for figure in figures:
        over = " (over the window)" if figure.largest_request > WINDOW else ""
        cached = f"{figure.cached_tokens:,} ({100 * figure.cached_tokens / figure.tokens_sent:.0f}%)"
        print(
            f"| {figure.iterations} | {figure.mode} | {figure.status} | {figure.requests} ({figure.summary_requests}) "
            f"| {figure.tokens_sent:,} | {figure.tokens_sent // figure.iterations:,} "
            f"| {figure.largest_request:,}{over} | {cached} | {figure.compactions} |"
        )
    by_mode = {(figure.mode, figure.iterations): figure for figure in figures}
    for mode in ("whole history", "compaction"):
        short, long = by_mode[(mode, SIZES[1])], by_mode[(mode, SIZES[-1])]
        growth = (long.tokens_sent / long.iterations) / (short.tokens_sent / short.iterations)
        print(f"{mode}: tokens per iteration at {SIZES[-1]} iterations are {growth:.2f}x those at {SIZES[1]}")


def main() -> None:
    """Measure and print."""
    print_table(measure())
