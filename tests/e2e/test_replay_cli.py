"""`stepwise replay`: a stored run asked again under another model, its tool calls answered from the
recording, counted at the tool API's loopback server; the new run linked to its original; a fork that
keeps the first iterations exactly as they were stored."""

from __future__ import annotations

import io
import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

from stepwise.cli import main
from tests.conftest import PROJECT_ROOT
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.tool_server import Json, ScriptableToolServer

FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "evals"
WEATHER = {"city": "Paris", "condition": "light rain", "temperature_c": 14.0}
CONVERSION = {"amount": 100, "from": "EUR", "to": "USD", "rate": 1.086957, "result": 108.7}
BOOK_HOTEL = {
    "toolName": "book_hotel",
    "description": "Book a hotel room (a side effect).",
    "method": "POST",
    "path": "/book",
    "parameter": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def act(tool: str, arguments: dict[str, Any]) -> dict[str, str]:
    block = json.dumps({"action": tool, "action_input": arguments})
    return {"content": f"Thought: I need {tool}.\n```json\n{block}\n```"}


def answer(text: str) -> dict[str, str]:
    block = json.dumps({"action": "Final Answer", "action_input": text})
    return {"content": f"Thought: I can answer.\n```json\n{block}\n```"}


# The changed model: for the Paris question it asks the recorded call again, then two calls the original
# never made (a GET and a POST); for the EUR question (a fork from iteration 2) it only answers differently.
VERSION_2_SCENARIOS: list[dict[str, Any]] = [
    {
        "match": r"\bEUR\b",
        "turns": [
            act("get_weather", {"city": "Paris"}),
            act("convert_currency", {"amount": 100, "from": "EUR", "to": "USD"}),
            answer("Version 2: bring an umbrella, and 100 EUR buys 108.70 USD."),
        ],
    },
    {
        "turns": [
            act("get_weather", {"city": "Paris"}),
            act("convert_currency", {"from": "EUR", "amount": 100.0, "to": "USD"}),
            act("book_hotel", {"city": "Paris"}),
            answer("Version 2: light rain in Paris."),
        ]
    },
]


@pytest.fixture
def tool_api() -> Iterator[ScriptableToolServer]:
    """The tools' API on loopback, recording every request it gets."""
    with ScriptableToolServer() as server:
        server.on("/weather/", Json(WEATHER))
        server.on("/convert", Json(CONVERSION))
        server.on("/book", Json({"booked": True}))
        yield server


def write_config(folder: Path, api_url: str, scenarios: list[dict[str, Any]] | None = None) -> Path:
    """tests/fixtures/evals/agent.yaml on `api_url` with a POST tool too; another script when given."""
    config = yaml.safe_load((FIXTURES / "agent.yaml").read_text(encoding="utf-8"))
    api = config["tools"]["apis"][0]
    api["url"] = api_url
    api["tools"].append(BOOK_HOTEL)
    config["profiles"]["default"]["limits"]["max_iterations"] = 6
    folder.mkdir(parents=True, exist_ok=True)
    script = FIXTURES / "agent-script.yaml"
    if scenarios is not None:
        script = folder / "version-2-script.yaml"
        script.write_text(yaml.safe_dump({"scenarios": scenarios}), encoding="utf-8")
    config["models"]["agent"]["script"] = str(script)
    path = folder / "stepwise.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture
def store_options(dynamodb_local: str, unique_table_name: str) -> list[str]:
    """The CLI options that point a command at the session's DynamoDB Local, in a table of the test's own."""
    return ["--dynamodb-endpoint", dynamodb_local, "--table-name", unique_table_name]


def ask(question: str, config: Path, store_options: list[str]) -> dict[str, Any]:
    out = io.StringIO()
    assert main(["run", question, "--config", str(config), "--json", *store_options], out=out) == 0
    document: dict[str, Any] = json.loads(out.getvalue())
    return document


def replay(run_id: str, config: Path, store_options: list[str], *options: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = main(["replay", run_id, "--config", str(config), "--json", *options, *store_options], out=out)
    document: dict[str, Any] = json.loads(out.getvalue())
    return code, document


def partition(store_options: list[str], run_id: str) -> dict[str, dict[str, Any]]:
    """Every stored item of a run, as DynamoDB holds it, by sort key."""
    client = boto3.client("dynamodb", endpoint_url=store_options[1], region_name="us-east-1")
    items = client.query(
        TableName=store_options[3],
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"RUN#{run_id}"}},
        ConsistentRead=True,
    )["Items"]
    return {item["sk"]["S"]: item for item in items}


def test_a_replay_under_another_model_answers_its_tool_calls_from_the_recording_and_calls_no_tool(
    tmp_path: Path, tool_api: ScriptableToolServer, store_options: list[str]
) -> None:
    # Given a run recorded under the first model, which called get_weather once
    original = ask("What is the weather in Paris?", write_config(tmp_path / "v1", tool_api.url), store_options)
    assert [request.path for request in tool_api.requests] == ["/weather/Paris"]
    # When it is replayed under a model that asks get_weather again, then a GET and a POST it never asked
    code, document = replay(
        original["run_id"], write_config(tmp_path / "v2", tool_api.url, VERSION_2_SCENARIOS), store_options
    )
    # Then the tool API got no request at all from the replay
    assert len(tool_api.requests) == 1
    # And the diff shows the calls and the answer that changed
    diff = document["diff"]
    assert code == 0 and document["status"] == "SUCCEEDED"
    assert (document["original_run_id"], document["answer"]) == (original["run_id"], "Version 2: light rain in Paris.")
    assert [call["tool"] for call in diff["tool_calls"]["original"]] == ["get_weather"]
    assert [call["tool"] for call in diff["tool_calls"]["replay"]] == ["get_weather", "convert_currency", "book_hotel"]
    assert diff["tool_calls"]["only_in_original"] == []
    assert [call["tool"] for call in diff["tool_calls"]["only_in_replay"]] == ["convert_currency", "book_hotel"]
    assert [call["tool"] for call in diff["tool_calls"]["not_recorded"]] == ["convert_currency", "book_hotel"]
    assert diff["answer"]["changed"] and diff["iterations"] == {"original": 2, "replay": 4, "changed": True}
    assert {"answer", "iterations", "tool_calls", "input_tokens", "output_tokens"} <= set(diff["changed"])
    # And the recorded call got the recorded observation, the others an observation saying they were not recorded
    items = partition(store_options, document["run_id"])
    observations = [items[f"MSG#000{iteration}#001"]["content"]["S"] for iteration in (1, 2, 3)]
    assert observations[0] == partition(store_options, original["run_id"])["MSG#0001#001"]["content"]["S"]
    assert all(text.startswith("Error: not recorded:") for text in observations[1:])
    # And the replay is a run of its own, linked to its original in its META
    meta = items["META"]["replay"]["M"]
    assert meta["original_run_id"]["S"] == original["run_id"] and meta["from_iteration"]["N"] == "0"


def test_live_tools_call_a_read_only_tool_the_recording_lacks_but_never_a_post(
    tmp_path: Path, tool_api: ScriptableToolServer, store_options: list[str]
) -> None:
    # Given the same recorded run
    original = ask("What is the weather in Paris?", write_config(tmp_path / "v1", tool_api.url), store_options)
    # When it is replayed with live tools allowed
    code, document = replay(
        original["run_id"],
        write_config(tmp_path / "v2", tool_api.url, VERSION_2_SCENARIOS),
        store_options,
        "--live-tools",
    )
    # Then the GET the recording lacks went to the API (once), the recorded one and the POST did not
    assert code == 0
    assert [request.path for request in tool_api.requests] == ["/weather/Paris", "/convert"]
    assert [call["tool"] for call in document["diff"]["tool_calls"]["not_recorded"]] == ["book_hotel"]


def test_a_fork_from_iteration_2_keeps_the_first_two_iterations_byte_for_byte(
    tmp_path: Path, tool_api: ScriptableToolServer, store_options: list[str]
) -> None:
    # Given a recorded run of three iterations (weather, conversion, answer)
    question = "What's the weather in Paris, and how much is 100 EUR in USD?"
    original = ask(question, write_config(tmp_path / "v1", tool_api.url), store_options)
    assert original["iterations"] == 3
    requests_before = len(tool_api.requests)
    # When it is replayed under the changed model from iteration 2
    code, document = replay(
        original["run_id"],
        write_config(tmp_path / "v2", tool_api.url, VERSION_2_SCENARIOS),
        store_options,
        "--from-iteration",
        "2",
    )
    # Then the new model went on at iteration 3 with its own answer, and no tool was called
    assert code == 0 and document["answer"] == "Version 2: bring an umbrella, and 100 EUR buys 108.70 USD."
    assert document["iterations"] == 3 and len(tool_api.requests) == requests_before

    # And everything of iterations 0 to 2 is stored exactly as in the original, the run's key and expiry aside
    def kept(run_id: str) -> dict[str, dict[str, Any]]:
        unchanged = ("pk", "expires_at")
        return {
            sort_key: {name: value for name, value in item.items() if name not in unchanged}
            for sort_key, item in partition(store_options, run_id).items()
            if "MSG#" <= sort_key < "MSG#0003" or "STEP#0001" <= sort_key < "STEP#0003"
        }

    before, after = kept(original["run_id"]), kept(document["run_id"])
    assert after == before
    assert {"MSG#0001#000", "MSG#0001#001", "MSG#0002#000", "MSG#0002#001", "STEP#0001#parse"} <= set(after)
    # And iteration 3 is the new model's
    assert document["diff"]["answer"]["changed"]


def test_a_fork_past_the_original_and_an_unknown_run_are_usage_errors(
    tmp_path: Path, tool_api: ScriptableToolServer, store_options: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a run of two iterations
    config = write_config(tmp_path / "v1", tool_api.url)
    original = ask("What is the weather in Paris?", config, store_options)
    capsys.readouterr()
    # When a fork from iteration 2 is asked, then it is refused in one line
    code = main(["replay", original["run_id"], "--config", str(config), "--from-iteration", "2", *store_options])
    assert code == 2 and "--from-iteration: run" in capsys.readouterr().err
    # And a run the store does not hold is one line too
    assert main(["replay", "nosuchrun", "--config", str(config), *store_options]) == 2
    assert "no run nosuchrun in the store" in capsys.readouterr().err


class DirectoryWatch:
    """Lists a folder again and again while it runs, and remembers every name it saw that was not there
    at the start: a file written and removed during a command is seen, whoever the command runs as."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._before = set(os.listdir(folder))
        self.appeared: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.005):
            self.appeared |= set(os.listdir(self._folder)) - self._before

    def __enter__(self) -> DirectoryWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self.appeared |= set(os.listdir(self._folder)) - self._before


@pytest.fixture
def read_only_config(tmp_path: Path) -> Iterator[tuple[Path, FakeOpenAIServer]]:
    """agent.yaml and its scripts in a read-only folder, with model `gpt5` (an OpenAI reasoning model, on a
    loopback stand-in) and an unrelated profile `quiet` whose `reasoning: {enabled: false}` its scripted
    model takes but gpt5, which always reasons, would refuse."""
    folder = tmp_path / "config"
    folder.mkdir()
    for name in ("agent-script.yaml", "agent-v2-script.yaml", "judge-script.yaml"):
        shutil.copy(FIXTURES / name, folder / name)
    config = yaml.safe_load((FIXTURES / "agent.yaml").read_text(encoding="utf-8"))
    with FakeOpenAIServer() as server:
        server.default(body=chat_completion(content=answer("Version 5: light rain in Paris.")["content"]))
        config["models"]["gpt5"] = {"provider": "openai", "base_url": server.base_url, "model": "gpt-5-mini"}
        config["profiles"]["quiet"] = {"model": "agent", "reasoning": {"enabled": False}}
        path = folder / "agent.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        folder.chmod(0o555)
        try:
            yield path, server
        finally:
            folder.chmod(0o755)


def test_a_replay_with_another_model_changes_only_its_profile_in_memory(
    read_only_config: tuple[Path, FakeOpenAIServer], tool_api: ScriptableToolServer, store_options: list[str]
) -> None:
    # Given a run recorded under the default profile, its configuration in a read-only folder beside an
    # unrelated profile whose reasoning setting the replay's model would refuse
    config, server = read_only_config
    with pytest.MonkeyPatch.context() as environment:
        environment.setenv("STEPWISE_EXAMPLE_API_URL", tool_api.url)
        original = ask("What is the weather in Paris?", config, store_options)
        # When it is replayed with --model naming that model
        with DirectoryWatch(config.parent) as watch:
            code, document = replay(original["run_id"], config, store_options, "--model", "gpt5")
    # Then the replayed profile ran on that model, the unrelated profile's setting not in the way
    assert (code, document["answer"]) == (0, "Version 5: light rain in Paris.")
    assert [request.body["model"] for request in server.requests] == ["gpt-5-mini"]
    assert [request.path for request in tool_api.requests] == ["/weather/Paris"]
    # And the run says which model it was
    assert partition(store_options, document["run_id"])["META"]["metadata"]["M"] == {"replay.model": {"S": "gpt5"}}
    # And nothing was written beside the configuration, not even for a moment
    assert watch.appeared == set()


COUNTER_MODULE = '''
from pathlib import Path

from stepwise.tools import tool


@tool
def count(name: str) -> str:
    """Count one more call.

    Args:
        name: What is counted.
    """
    counter = Path(__file__).with_name("calls.txt")
    calls = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(calls))
    return f"{name}: call {calls}"
'''


def counting_config(folder: Path, calls: int) -> Path:
    """A configuration whose agent calls the Python tool `count` with the same argument `calls` times (in
    `folder`, beside the tool's module, which one process imports once)."""
    (folder / "replay_counter.py").write_text(COUNTER_MODULE, encoding="utf-8")
    turns = [act("count", {"name": "sheep"}) for _ in range(calls)] + [answer(f"Counted {calls} times.")]
    config = {
        "models": {"agent": {"provider": "scripted", "scenarios": [{"turns": turns}]}},
        "tools": {"python": ["replay_counter"]},
        "profiles": {"default": {"model": "agent", "strategy": "react", "protocol": "react_json"}},
    }
    path = folder / f"counting-{calls}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_the_nth_same_call_of_a_replay_gets_the_nth_recorded_answer_then_the_last(
    tmp_path: Path, store_options: list[str]
) -> None:
    # Given a run that called the same tool with the same argument twice, answered "call 1" then "call 2"
    original = ask("Count sheep.", counting_config(tmp_path, calls=2), store_options)
    assert (tmp_path / "calls.txt").read_text() == "2"
    # When a model that makes that call three times replays it
    code, document = replay(original["run_id"], counting_config(tmp_path, calls=3), store_options)
    # Then the calls got the recorded answers in order, the third the last one, and the tool never ran
    observations = [
        partition(store_options, document["run_id"])[f"MSG#000{iteration}#001"]["content"]["S"]
        for iteration in (1, 2, 3)
    ]
    assert code == 0 and observations == ["sheep: call 1", "sheep: call 2", "sheep: call 2"]
    assert (tmp_path / "calls.txt").read_text() == "2"
