"""Every sample event in events/ through `stepwise invoke --seed-run`, as `sam local invoke` takes it."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from stepwise.cli import main
from tests.conftest import PROJECT_ROOT

EVENTS = PROJECT_ROOT / "events"


@pytest.fixture
def store_options(dynamodb_local: str, unique_table_name: str) -> list[str]:
    """The CLI options that point a command at the session's DynamoDB Local, in a table of the test's own."""
    return ["--dynamodb-endpoint", dynamodb_local, "--table-name", unique_table_name]


def _functions_by_event() -> dict[str, str]:
    """The `| file | Function |` rows of events/README.md."""
    rows = re.findall(r"^\| (\S+\.json) \| (\w+) \|$", (EVENTS / "README.md").read_text(encoding="utf-8"), re.M)
    return dict(rows)


@pytest.mark.parametrize("event_file", sorted(EVENTS.glob("*.json")), ids=lambda path: path.name)
def test_every_sample_event_is_invoked_by_its_function_with_a_seeded_run(
    event_file: Path, store_options: list[str]
) -> None:
    # Given a sample event and the function events/README.md names for it
    function = _functions_by_event().get(event_file.name)
    assert function is not None, f"{event_file.name} has no row in events/README.md"
    out = io.StringIO()
    # When it is invoked with the state its step expects seeded first
    code = main(["invoke", function, "-e", str(event_file), "--seed-run", *store_options], out=out)
    # Then the function returned a result, printed as JSON
    assert code == 0, out.getvalue()
    assert isinstance(json.loads(out.getvalue()), dict)


def test_seeding_twice_in_the_embedded_store_does_not_collide(tmp_path: Path) -> None:
    # Given an embedded store that already holds the run a step event names
    event = str(EVENTS / "parse.json")
    data_dir = ["--data-dir", str(tmp_path)]
    assert main(["invoke", "ParseFunction", "-e", event, "--seed-run", *data_dir], out=io.StringIO()) == 0
    out = io.StringIO()
    # When the same event is seeded and invoked again
    code = main(["invoke", "ParseFunction", "-e", event, "--seed-run", *data_dir], out=out)
    # Then the seeded state went to a throwaway store and the step decided again
    assert code == 0
    assert json.loads(out.getvalue())["next"] == "tool_calls"
