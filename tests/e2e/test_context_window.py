"""Long runs against a model that refuses any request over its context window, through the real state
machine and handlers: the conversation is summarized by the Compact state, never sent whole past the
window, and every raw message stays stored."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepwise.local.server import LocalApi
from tests.e2e.conftest import ConfigWriter, get_tool, http_api, serve
from tests.support.polling import run_seen, wait_for
from tests.support.state_payloads import size_less_counters
from tests.support.tool_server import Json, ScriptableToolServer
from tests.support.windowed_model import (
    PageReader,
    WindowedModelServer,
    dense_tokens,
    is_summary_request,
    page_text,
)

PAGE_CHARS = 6000
TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT"}


@pytest.fixture(scope="module")
def pages() -> Iterator[ScriptableToolServer]:
    """A tool API serving pages 1 to 120 of 6 KB each at /pages/<n>."""
    with ScriptableToolServer() as server:
        for page in range(1, 121):
            server.on(f"/pages/{page}", Json({"page": page, "text": page_text(page, PAGE_CHARS)}))
        yield server


def windowed_model(model: WindowedModelServer, **fields: Any) -> dict[str, Any]:
    """An `openai` model entry for the windowed fake, its window declared as the catalog would know it."""
    return {
        "provider": "openai",
        "base_url": model.base_url,
        "model": "windowed-model",
        "api_key": "sk-windowed",
        "timeout_seconds": 30,
        "context_window": model.window,
        "capabilities": {"native_tools": True},
        **fields,
    }


def reader_profile(pages: ScriptableToolServer, max_iterations: int) -> dict[str, Any]:
    """A function-calling profile with `fetch_page`, observations kept whole (6 KB pages)."""
    return {
        "apis": [http_api(pages.url, get_tool("fetch_page", "/pages/{page}", page="integer"))],
        "strategy": "function_calling",
        "limits": {"max_iterations": max_iterations, "max_observation_chars": 8000, "max_parallel_calls": 1},
    }


def finished(client: httpx.Client, run_id: str) -> dict[str, Any]:
    """The run once it ended, with its trace (polled as a client would); fails naming its last status if it does not."""

    def read() -> dict[str, Any]:
        body: dict[str, Any] = client.get(f"/v1/runs/{run_id}", params={"trace": "true"}).json()
        return body

    return wait_for(read, lambda run: run["status"] in TERMINAL, what=f"run {run_id} ended", shown=run_seen)


def test_twelve_6kb_pages_through_a_10k_window_succeed_with_every_raw_observation_kept(
    pages: ScriptableToolServer, tmp_path: Path
) -> None:
    with WindowedModelServer(window=10_000, responder=PageReader(12)) as model:
        # Given a model with a 10,000-token window that refuses anything longer, and 12 pages of 6 KB to read
        profile = reader_profile(pages, max_iterations=20)
        config = {
            "models": {"m": windowed_model(model)},
            "tools": {"apis": profile.pop("apis"), "builtin": []},
            "profiles": {"default": {"model": "m", **profile}},
        }
        with (
            serve(config, tmp_path) as api,
            httpx.Client(base_url=api.url, headers={"x-api-key": "k"}, timeout=30) as client,
        ):
            # When the question is posted to `stepwise serve` and the run is read back with its trace
            run_id = client.post("/v1/runs", json={"input": "How many parcels are there?"}).json()["run_id"]
            run = finished(client, run_id)
            events = client.get(f"/v1/runs/{run_id}/events").json()["events"]
    # Then it succeeded with the model's answer, and no request it sent was over the window
    assert (run["status"], run["answer"]) == ("SUCCEEDED", "I read 12 pages.")
    assert [exchange.refused for exchange in model.exchanges].count(True) == 0
    assert model.largest_prompt <= 10_000
    # And the trace and the event stream show the compactions, and all 12 observations
    compactions = [step for step in run["trace"] if step["kind"] == "compaction"]
    assert compactions and all(
        step["compaction"]["tokens_after"] < step["compaction"]["tokens_before"] for step in compactions
    )
    assert [step["kind"] for step in events].count("compaction") == len(compactions)
    tools = [step for step in run["trace"] if step["kind"] == "tool"]
    assert [step["arguments"] for step in tools] == [{"page": page} for page in range(1, 13)]
    assert run["usage"]["compactions"] == len(compactions)


def test_the_raw_observations_stay_stored_whole_while_requests_carry_a_summary(
    pages: ScriptableToolServer, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with WindowedModelServer(window=10_000, responder=PageReader(12)) as model:
        # Given the same 12 pages through a 10,000-token window
        profile = reader_profile(pages, max_iterations=20)
        environment, _ = local_run(write_config(windowed_model(model), **profile))
        # When the run executes
        meta, _ = environment.ask("How many parcels are there?")
        last_request = model.exchanges[-1].body
    # Then every page is stored whole as its tool message, while the last request carried the summary
    observations = [m.content for m in environment.runtime.store.list_messages(meta.run_id) if m.role == "tool"]
    assert [json.loads(content)["page"] for content in observations] == list(range(1, 13))
    assert all(len(json.loads(content)["text"]) == PAGE_CHARS for content in observations)
    contents = [message.get("content") or "" for message in last_request["messages"]]
    assert any(content.startswith("[Summary of iterations 1-") for content in contents)
    assert sum('"page": 1,' in content for content in contents) == 0


def unlisted_window_model(model: WindowedModelServer) -> dict[str, Any]:
    """The windowed fake as a local model whose window neither the configuration nor the catalog gives."""
    entry = windowed_model(model)
    del entry["context_window"]
    return entry


def test_a_window_stated_by_the_providers_refusal_is_learned_and_twelve_pages_succeed(
    pages: ScriptableToolServer, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with WindowedModelServer(window=10_000, responder=PageReader(12)) as model:
        # Given the 10,000-token model (its refusal stating the window as OpenAI words it), 12 pages of 6 KB,
        # and no window in the configuration or the catalog
        profile = reader_profile(pages, max_iterations=20)
        environment, listener = local_run(write_config(unlisted_window_model(model), **profile))
        # When the run executes
        meta, execution = environment.ask("How many parcels are there?")
    # Then it succeeded, refused once only: the refusal taught it the window, and compaction did the rest
    assert (execution.status, meta.status, meta.answer) == ("SUCCEEDED", "SUCCEEDED", "I read 12 pages.")
    assert [exchange.refused for exchange in model.exchanges].count(True) == 1
    # And the run carried the window from Compact on, for its later steps wherever they run
    compacted = [event.output for event in listener.events if event.type == "exited" and event.state == "Compact"]
    assert compacted and all(output["run"]["learned_window"] == 10_000 for output in compacted)
    compactions = [step for step in environment.runtime.store.list_steps(meta.run_id) if step.compaction]
    assert compactions and compactions[0].compaction is not None
    assert compactions[0].compaction.reason == "overflow"


def test_a_window_listed_by_a_vllm_server_is_used_from_the_first_call(
    pages: ScriptableToolServer, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with WindowedModelServer(window=10_000, responder=PageReader(12), listed_model="windowed-model") as model:
        # Given the same model served by a fake vLLM whose /v1/models states its max_model_len, and no window
        # in the configuration or the catalog
        profile = reader_profile(pages, max_iterations=20)
        environment, _ = local_run(write_config(unlisted_window_model(model), **profile))
        # When the run executes
        meta, execution = environment.ask("How many parcels are there?")
    # Then it succeeded without a single refusal: the listed window was fitted to from the start
    assert (execution.status, meta.status, meta.answer) == ("SUCCEEDED", "SUCCEEDED", "I read 12 pages.")
    assert not any(exchange.refused for exchange in model.exchanges)
    assert model.largest_prompt <= 10_000


@pytest.mark.parametrize(("props", "refusals"), [(True, 0), (False, 1)], ids=["props", "refusal-only"])
def test_a_llama_cpp_server_teaches_its_window_by_its_props_or_its_refusal(
    props: bool, refusals: int, pages: ScriptableToolServer, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with WindowedModelServer(window=10_000, responder=PageReader(12), flavor="llama.cpp", props=props) as model:
        # Given the 10,000-token model on a fake llama.cpp server (its listing states only the trained 131,072;
        # /props states a slot's window, or is not answered; a prompt too long refused with llama.cpp's body),
        # and no window in the configuration or the catalog
        profile = reader_profile(pages, max_iterations=20)
        environment, _ = local_run(write_config(unlisted_window_model(model), **profile))
        # When the run executes
        meta, execution = environment.ask("How many parcels are there?")
    # Then it succeeded, summarized on the way, refused never (the window read from /props) or once (from
    # the refusal), and no prompt past the window was sent after that
    assert (execution.status, meta.status, meta.answer) == ("SUCCEEDED", "SUCCEEDED", "I read 12 pages.")
    assert [exchange.refused for exchange in model.exchanges].count(True) == refusals
    assert [step for step in environment.runtime.store.list_steps(meta.run_id) if step.compaction]
    assert max(exchange.prompt_tokens for exchange in model.exchanges if not exchange.refused) < 10_000


# Long enough for the conversation to be summarized several times (6 KB pages in a 16,000-token window are
# summarized every few iterations): a payload that kept anything per iteration or per summary would differ.
LONG_RUN_PAGES = 39


def test_a_40_iteration_run_in_a_16k_window_summarized_several_times_keeps_a_payload_of_constant_size(
    pages: ScriptableToolServer, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with WindowedModelServer(window=16_000, responder=PageReader(LONG_RUN_PAGES)) as model:
        # Given a model with a 16,000-token window and 39 pages to read before it answers (in iteration
        # 40, not a final round)
        profile = reader_profile(pages, max_iterations=LONG_RUN_PAGES + 2)
        environment, listener = local_run(write_config(windowed_model(model), **profile))
        # When the run executes
        meta, execution = environment.ask("Read every page.")
    # Then it succeeded in 40 iterations, its conversation summarized several times, and its largest
    # request stayed under the window
    last = LONG_RUN_PAGES + 1
    assert (execution.status, meta.status, meta.answer, meta.iteration) == (
        "SUCCEEDED",
        "SUCCEEDED",
        f"I read {LONG_RUN_PAGES} pages.",
        last,
    )
    compactions = [step for step in environment.runtime.store.list_steps(meta.run_id) if step.compaction]
    assert len(compactions) >= 3
    assert not any(exchange.refused for exchange in model.exchanges)
    assert model.largest_prompt < 16_000
    # And the payload leaving IterationGuard was the same size at iteration 1 and 40 but for its counters
    outputs = {
        event.output["iteration"]: event.output
        for event in listener.events
        if event.type == "exited" and event.state == "IterationGuard"
    }
    assert size_less_counters(outputs[last]) == size_less_counters(outputs[1])
    assert len(json.dumps(outputs[last])) < 2048


def test_a_provider_overflow_compacts_once_and_the_call_is_made_again(
    pages: ScriptableToolServer, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a model whose tokenizer counts this text as denser than Stepwise estimates it and which reports
    # no usage to learn from, so a request estimated to fit is refused by the provider as too long
    reader = PageReader(6)
    with WindowedModelServer(window=12_000, responder=reader, tokenizer=dense_tokens, report_usage=False) as model:
        profile = reader_profile(pages, max_iterations=10)
        environment, listener = local_run(write_config(windowed_model(model), **profile))
        # When the run executes
        meta, _ = environment.ask("How many parcels are there?")
    # Then the refusal was caught into Compact, which summarized, and the call then went through
    assert (meta.status, meta.answer) == ("SUCCEEDED", "I read 6 pages.")
    refusals = [exchange for exchange in model.exchanges if exchange.refused]
    assert refusals and not model.exchanges[-1].refused
    assert [event.state for event in listener.events if event.type == "caught"] == ["LLMCall"] * len(
        [event for event in listener.events if event.type == "caught"]
    )
    steps = environment.runtime.store.list_steps(meta.run_id)
    assert "overflow" in [step.compaction.reason for step in steps if step.compaction is not None]
    # And no iteration's call was refused more than twice (once before Compact, once cut again after it)
    assert meta.usage.llm_calls - reader.summaries == 7


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(lambda body: "\x00\x07 ~~ @@@ ###\ufffd", id="garbage"),
        pytest.param(lambda body: "", id="nothing"),
        pytest.param(lambda body: "Facts:\n" + "- a very long note\n" * 20_000 + "Open:\n- nothing", id="too-long"),
    ],
)
def test_an_unusable_summary_gives_way_to_the_digest_and_the_run_succeeds(
    reply: Callable[[dict[str, Any]], str],
    pages: ScriptableToolServer,
    write_config: ConfigWriter,
    local_run: Callable[..., Any],
) -> None:
    with WindowedModelServer(window=10_000, responder=PageReader(8, summary=reply)) as model:
        # Given a summarizer whose notes are garbage, nothing, or far over their budget
        profile = reader_profile(pages, max_iterations=12)
        environment, _ = local_run(write_config(windowed_model(model), **profile))
        # When a run long enough to be compacted executes
        meta, _ = environment.ask("How many parcels are there?")
    # Then it succeeded, every compaction fell back to the digest of the calls and their observations,
    # and no request went over the window
    assert (meta.status, meta.answer) == ("SUCCEEDED", "I read 8 pages.")
    notes = [step.compaction for step in environment.runtime.store.list_steps(meta.run_id) if step.compaction]
    assert notes and {note.source for note in notes} == {"digest"}
    assert not any(exchange.refused for exchange in model.exchanges)
    summary = next(
        m.get("content") for m in model.exchanges[-1].body["messages"] if "[Summary" in (m.get("content") or "")
    )
    assert "fetch_page" in summary and "parcels" in summary


# Each answer is ~2,500 tokens: from the fourth turn on, the session's history is over the 8,000-token window,
# and by the last it is six times the window, so most turns must leave earlier turns out to fit.
SESSION_TURNS = 20


def test_twenty_session_turns_with_long_answers_never_send_a_request_over_the_window(tmp_path: Path) -> None:
    long_answer = "The depot report, in full. " + "Parcel counts by aisle and shelf. " * 300

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        return {
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": long_answer}, "finish_reason": "stop"}
            ],
            "usage": {"completion_tokens": 2500},
        }

    with WindowedModelServer(window=8_000, responder=answer) as model:
        # Given a session whose every turn is answered with ~10 KB of text, on an 8,000-token window
        config = {
            "models": {"m": windowed_model(model)},
            "tools": {"apis": [], "builtin": []},
            "profiles": {"default": {"model": "m", "strategy": "function_calling"}},
        }
        with (
            serve(config, tmp_path) as api,
            httpx.Client(base_url=api.url, headers={"x-api-key": "k"}, timeout=30) as client,
        ):
            # When 20 turns are asked in the session, one after the other
            statuses = [_ask_in_session(api, client, turn) for turn in range(SESSION_TURNS)]
    # Then every turn succeeded, and no request carried more than the window
    assert statuses == ["SUCCEEDED"] * SESSION_TURNS
    assert not any(exchange.refused for exchange in model.exchanges)
    assert model.largest_prompt <= 8_000
    # And the later turns carried earlier turns (the newest that fit), not none of them
    assert len(model.exchanges[-1].body["messages"]) > 2


def _ask_in_session(api: LocalApi, client: httpx.Client, turn: int) -> str:
    run_id = client.post("/v1/runs", json={"input": f"Report {turn}, please.", "session_id": "depot"}).json()["run_id"]
    return str(finished(client, run_id)["status"])


def test_the_structured_answer_of_a_compacted_run_is_asked_with_the_summary_within_the_window(
    pages: ScriptableToolServer, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    reader = PageReader(8)

    def model_or_formatter(body: dict[str, Any]) -> dict[str, Any]:
        # the formatting call offers its own tool, which the model calls with the answer as JSON
        if [tool["function"]["name"] for tool in body.get("tools", [])] == ["structured_answer"]:
            call = {
                "id": "call_answer",
                "type": "function",
                "function": {"name": "structured_answer", "arguments": '{"pages": 8}'},
            }
            return {
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                        "finish_reason": "tool_calls",
                    }
                ],
                "usage": {"completion_tokens": 8},
            }
        return reader(body)

    with WindowedModelServer(window=10_000, responder=model_or_formatter) as model:
        # Given a profile whose answers are also wanted as JSON, on a run long enough to be compacted
        schema = {"type": "object", "properties": {"pages": {"type": "integer"}}, "required": ["pages"]}
        profile = reader_profile(pages, max_iterations=12)
        environment, _ = local_run(write_config(windowed_model(model), response_schema=schema, **profile))
        # When it runs to its answer
        meta, _ = environment.ask("How many pages are there?")
        formatting = model.exchanges[-1]
    # Then the JSON answer was given, from a request that carried the summary and fitted the window
    assert (meta.status, meta.output) == ("SUCCEEDED", {"pages": 8})
    assert not formatting.refused
    assert any("[Summary of iterations 1-" in (m.get("content") or "") for m in formatting.body["messages"])


def test_a_chinese_profile_asks_for_its_summaries_and_renders_them_in_chinese(
    pages: ScriptableToolServer, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    notes = "事实\uff1a\n- 第 1 至 4 页共有 70 个包裹\n待办\uff1a\n- 读完其余页面"
    with WindowedModelServer(window=10_000, responder=PageReader(8, summary=lambda body: notes)) as model:
        # Given a profile whose language is Chinese, on a run long enough to be compacted
        profile = reader_profile(pages, max_iterations=12)
        environment, _ = local_run(write_config(windowed_model(model), language="zh", **profile))
        # When it runs
        meta, _ = environment.ask("一共有多少个包裹\uff1f")
        summary_requests = [e.body for e in model.exchanges if is_summary_request(e.body)]
        last_request = model.exchanges[-1].body
    # Then the summarizer was asked in Chinese, its notes were kept, and the summary was rendered in Chinese
    assert meta.status == "SUCCEEDED" and summary_requests
    assert "工作笔记" in summary_requests[0]["messages"][0]["content"]
    summary = next(m["content"] for m in last_request["messages"] if (m.get("content") or "").startswith("[本任务第"))
    assert "未注明工具的输出\uff08引用\uff09\uff1a\n> - 第 1 至 4 页共有 70 个包裹" in summary
    assert "fetch_page" in summary
