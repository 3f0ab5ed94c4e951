"""A user's mistakes with the `stepwise` command: one line on stderr, a non-zero exit, never a traceback."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from stepwise.cli import main
from stepwise.local.dynamodb_local import DATABASE_FILE
from tests.conftest import PROJECT_ROOT
from tests.e2e.conftest import ConfigWriter
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.ports import refused_port


def test_a_missing_event_file_is_one_line_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    # When invoke is given an event file that does not exist
    code = main(["invoke", "ParseFunction", "-e", "events/no-such-event.json"], out=io.StringIO())
    # Then the exit code is non-zero and stderr is one line naming the file
    error = capsys.readouterr().err
    assert code == 2
    assert error.splitlines() == [
        "stepwise: cannot read the event file events/no-such-event.json: No such file or directory"
    ]


def test_an_event_file_that_is_not_json_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given an event file that is not JSON
    path = tmp_path / "event.json"
    path.write_text("{not json", encoding="utf-8")
    # When it is invoked
    code = main(["invoke", "ParseFunction", "-e", str(path)], out=io.StringIO())
    # Then one line says so
    error = capsys.readouterr().err
    assert code == 2
    assert len(error.splitlines()) == 1 and "is not JSON" in error


@pytest.mark.parametrize("value", ["0", "201", "three"])
def test_an_iteration_limit_out_of_bounds_is_one_line(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    # When run is given an impossible --max-iterations
    with pytest.raises(SystemExit) as exited:
        main(["run", "hi", "--max-iterations", value], out=io.StringIO())
    # Then it exits 2 with one line naming the option, before anything starts
    error = capsys.readouterr().err
    assert exited.value.code == 2
    assert len(error.splitlines()) == 1 and "--max-iterations" in error


@pytest.mark.parametrize("value", ["-1", "two"])
def test_a_worker_count_below_zero_or_not_a_number_is_one_line(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    # When serve is given an impossible --workers
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--workers", value], out=io.StringIO())
    # Then it exits 2 with one line naming the option, before anything starts
    error = capsys.readouterr().err
    assert exited.value.code == 2
    assert len(error.splitlines()) == 1 and "--workers" in error


def test_a_busy_port_is_one_line_saying_how_to_choose_another(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        # Given a port another program listens on
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # When serve is asked for that port
        code = main(["serve", "--port", str(port)], out=io.StringIO())
    # Then one line names the address and the option
    error = capsys.readouterr().err
    assert code == 2
    assert error.splitlines() == [f"stepwise: cannot listen on 127.0.0.1:{port}: Address already in use; pass --port N"]


def test_a_busy_port_is_the_same_one_line_when_run_as_a_module() -> None:
    with socket.socket() as taken:
        # Given a port another program listens on
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # When serve is asked for it through `python -m stepwise.cli` (the module then loads twice)
        ended = subprocess.run(
            [sys.executable, "-m", "stepwise.cli", "serve", "--port", str(port)], capture_output=True, text=True
        )
    # Then the same one line names the address and the option, with no error class before it
    assert ended.returncode == 2
    assert ended.stderr.splitlines() == [
        f"stepwise: cannot listen on 127.0.0.1:{port}: Address already in use; pass --port N"
    ]


def test_run_json_prints_only_the_run_on_stdout_and_its_logs_on_stderr(
    write_config: ConfigWriter, dynamodb_local: str, unique_table_name: str
) -> None:
    with FakeOpenAIServer() as server:
        # Given a model that refuses every request (the steps log the error)
        server.default(status=401, body={"error": {"message": "invalid api key"}})
        config_dir = write_config({"provider": "openai", "base_url": server.base_url, "model": "m"})
        # When `stepwise run --json` runs as a user runs it, stdout to a pipe
        completed = subprocess.run(
            [
                *(sys.executable, "-m", "stepwise.cli", "run", "hi", "--json"),
                *("--config", str(config_dir / "stepwise.yaml")),
                *("--dynamodb-endpoint", dynamodb_local, "--table-name", unique_table_name),
            ],
            capture_output=True,
            text=True,
            cwd=PROJECT_ROOT,
            timeout=120,
        )
    # Then stdout is exactly the run as JSON (what `| jq` reads), and the log lines went to stderr
    assert completed.returncode == 1
    assert json.loads(completed.stdout)["status"] == "FAILED"
    assert '"level"' in completed.stderr


def _run_with(environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stepwise.cli", "run", "hi"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _without_aws(tmp_path: Path) -> dict[str, str]:
    empty = tmp_path / "empty"
    empty.write_text("", encoding="utf-8")
    environment = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    environment |= {
        "AWS_SHARED_CREDENTIALS_FILE": str(empty),
        "AWS_CONFIG_FILE": str(empty),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    environment.pop("STEPWISE_DEFAULT_MODEL", None)
    return environment


@pytest.mark.parametrize("question", ["", "   "], ids=["empty", "blank"])
def test_a_question_the_api_would_refuse_is_one_line(question: str) -> None:
    # When the demo is asked an empty question, which POST /v1/runs answers 422
    ended = _stepwise("demo", question)
    # Then nothing runs: one line says why, exit 2
    assert ended.returncode == 2
    assert ended.stderr.splitlines() == ["stepwise: invalid request: question: must not be empty"]
    assert "run_id" not in ended.stdout


def test_a_question_the_api_would_refuse_is_refused_before_a_store_starts(tmp_path: Path) -> None:
    # When the demo is asked an empty question with its store in a folder of its own
    ended = _stepwise("demo", "", "--data-dir", str(tmp_path / "store"))
    # Then it is refused without starting the embedded DynamoDB, which would have made its database there
    assert ended.returncode == 2
    assert not (tmp_path / "store" / DATABASE_FILE).exists()


def _with_openai_at(tmp_path: Path, port: int) -> dict[str, str]:
    """No AWS credentials, and the OpenAI-compatible model at a loopback `port`."""
    return _without_aws(tmp_path) | {
        "STEPWISE_DEFAULT_MODEL": "openai",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": "sk-test-not-a-real-key-0000000000",
    }


def test_run_without_aws_credentials_says_in_one_line_how_to_configure_a_model(tmp_path: Path) -> None:
    # Given the default configuration (Bedrock) and no AWS credentials anywhere
    environment = _without_aws(tmp_path)
    # When a question is run
    completed = _run_with(environment)
    # Then nothing starts: one line names the missing credentials and both ways to configure a model
    assert completed.returncode == 2
    assert completed.stdout == ""
    (line,) = completed.stderr.splitlines()
    assert "no AWS credentials" in line
    assert "STEPWISE_DEFAULT_MODEL=openai OPENAI_BASE_URL=" in line and "OPENAI_API_KEY=" in line


def test_run_with_an_openai_endpoint_that_refuses_connections_says_so_in_one_line(tmp_path: Path) -> None:
    # Given the OpenAI-compatible model pointed at a loopback port nothing listens on
    with refused_port() as port:
        environment = _with_openai_at(tmp_path, port)
        # When a question is run
        completed = _run_with(environment)
        # Then one line names the endpoint that cannot be reached and how to configure a model
        assert completed.returncode == 2
        (line,) = completed.stderr.splitlines()
        assert f"127.0.0.1:{port} cannot be reached" in line
        assert "AWS credentials" in line and "OPENAI_BASE_URL" in line


def test_serve_with_an_openai_endpoint_that_refuses_connections_warns_first_then_serves(
    tmp_path: Path, dynamodb_local: str, unique_table_name: str
) -> None:
    # Given the OpenAI-compatible model pointed at a loopback port nothing listens on
    with refused_port() as port:
        environment = _with_openai_at(tmp_path, port)
        # When serve starts (on the session's DynamoDB Local: the store is not what this is about)
        store = ["--dynamodb-endpoint", dynamodb_local, "--table-name", unique_table_name]
        serve = subprocess.Popen(
            [sys.executable, "-m", "stepwise.cli", "serve", "--port", "0", *store],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert serve.stderr is not None and serve.stdout is not None
            first_error_line = serve.stderr.readline()
            banner = serve.stdout.readline()
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.communicate(timeout=60)
    # Then its first line on stderr says the model cannot be reached and how to configure one, and it serves
    assert first_error_line.startswith("stepwise serve: warning: ")
    assert f"127.0.0.1:{port} cannot be reached" in first_error_line and "OPENAI_BASE_URL" in first_error_line
    assert banner.startswith("stepwise serve: http://127.0.0.1:")
    assert serve.returncode == 0


# The console script users run (as `python -m stepwise.cli`, the CLI module would be loaded twice).
STEPWISE = str(Path(sys.executable).with_name("stepwise"))


def _stepwise(*arguments: str) -> subprocess.CompletedProcess[str]:
    """The `stepwise` command as a user runs it, in its own process."""
    return subprocess.run(
        [STEPWISE, *arguments],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("port", ["99999", "-1"])
def test_a_port_outside_the_tcp_range_is_one_line_naming_the_option(port: str) -> None:
    # When serve is given a port no socket can have
    completed = _stepwise("serve", "--port", port)
    # Then it exits 2 with one line naming the option and its range, before anything starts
    assert completed.returncode == 2
    (line,) = completed.stderr.splitlines()
    assert "--port" in line and "0..65535" in line


def test_a_table_name_dynamodb_refuses_is_one_line_naming_the_option() -> None:
    # When demo is given a table name with a space and a '!'
    completed = _stepwise("demo", "--table-name", "bad name!")
    # Then it exits 2 with one line naming the option and the rule, before any store starts
    assert completed.returncode == 2
    (line,) = completed.stderr.splitlines()
    assert "--table-name" in line and "3 to 255" in line


def test_a_data_dir_that_is_a_file_is_one_line_naming_the_option(tmp_path: Path) -> None:
    # Given a regular file
    taken = tmp_path / "a-file"
    taken.write_text("", encoding="utf-8")
    # When demo is asked to keep its store there
    completed = _stepwise("demo", "--data-dir", str(taken))
    # Then it exits 2 with one line naming the option and why
    assert completed.returncode == 2
    assert completed.stderr.splitlines() == [f"stepwise: --data-dir {taken}: not a folder"]


def test_a_data_dir_that_cannot_be_created_is_one_line_naming_the_option(tmp_path: Path) -> None:
    # Given a folder path under a regular file
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    impossible = tmp_path / "a-file" / "store"
    # When demo is asked to keep its store there
    completed = _stepwise("demo", "--data-dir", str(impossible))
    # Then it exits 2 with one line naming the option and the system's reason
    assert completed.returncode == 2
    assert completed.stderr.splitlines() == [
        f"stepwise: --data-dir {impossible}: cannot create the folder: Not a directory"
    ]


def test_a_reader_of_stdout_that_goes_away_ends_the_command_quietly(
    dynamodb_local: str, unique_table_name: str
) -> None:
    # Given a pipe for stdout whose reader is gone before anything is written (`stepwise demo | true`)
    reader, writer = os.pipe()
    os.close(reader)
    # When the demo runs into it
    try:
        completed = subprocess.run(
            [
                *(STEPWISE, "demo"),
                *("--dynamodb-endpoint", dynamodb_local, "--table-name", unique_table_name),
            ],
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            cwd=PROJECT_ROOT,
            timeout=120,
            check=False,
        )
    finally:
        os.close(writer)
    # Then it stops with a shell's SIGPIPE status and no traceback
    assert completed.returncode == 141
    assert "Traceback" not in completed.stderr and "BrokenPipeError" not in completed.stderr


def test_invoking_an_unknown_function_does_not_suggest_seeding_a_run(
    dynamodb_local: str, unique_table_name: str
) -> None:
    # When invoke names a function template.yaml does not have
    completed = _stepwise(
        *("invoke", "NoSuchFunction", "-e", "events/parse.json"),
        *("--dynamodb-endpoint", dynamodb_local, "--table-name", unique_table_name),
    )
    # Then the error names the function, and no hint about --seed-run follows it
    assert completed.returncode == 1
    assert "Function not found: NoSuchFunction" in completed.stdout
    assert "--seed-run" not in completed.stderr


def test_invoking_a_step_event_whose_run_is_not_stored_suggests_seeding_it(
    dynamodb_local: str, unique_table_name: str
) -> None:
    # When a step event is invoked against a store without the run it names
    completed = _stepwise(
        *("invoke", "ParseFunction", "-e", "events/parse.json"),
        *("--dynamodb-endpoint", dynamodb_local, "--table-name", unique_table_name),
    )
    # Then the error names the missing run, and one line says how to build it first
    assert completed.returncode == 1
    assert json.loads(completed.stdout)["errorType"] == "RunNotFound"
    assert (
        completed.stderr.splitlines()[-1] == "stepwise: a step event needs its run stored; --seed-run builds it first"
    )


@pytest.mark.parametrize("key", ["ollama", "x"])
def test_a_local_servers_short_key_runs_with_one_warning_line(
    key: str, tmp_path: Path, dynamodb_local: str, unique_table_name: str
) -> None:
    with FakeOpenAIServer() as server:
        # Given the OpenAI-compatible model on loopback with the key local servers take (Ollama, vLLM)
        server.default(body=chat_completion(content="Final Answer: ollama says hi"))
        environment = _with_openai_at(tmp_path, int(server.base_url.rsplit(":", 1)[1].split("/")[0]))
        environment["OPENAI_API_KEY"] = key
        # When a question is run
        completed = subprocess.run(
            [
                *(sys.executable, "-m", "stepwise.cli", "run", "hi", "--json"),
                *("--dynamodb-endpoint", dynamodb_local, "--table-name", unique_table_name),
            ],
            env=environment,
            capture_output=True,
            text=True,
            cwd=PROJECT_ROOT,
            timeout=120,
        )
        sent_keys = {request.headers.get("authorization") for request in server.requests}
    # Then the run succeeds with the key sent as it is, and its answer is whole (the key is not redacted in it)
    assert completed.returncode == 0, completed.stderr[-2000:]
    run = json.loads(completed.stdout)
    assert (run["status"], sent_keys) == ("SUCCEEDED", {f"Bearer {key}"})
    assert "ollama says hi" in run["answer"]
    # And one line warns that the key is too short to redact inside text, without quoting it
    warnings = [line for line in completed.stderr.splitlines() if "too short to redact" in line]
    assert len(warnings) == 1
    assert f'"{key}"' not in warnings[0]
