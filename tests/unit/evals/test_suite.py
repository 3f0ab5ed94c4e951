"""Reading suite files: the forms a suite takes, and a mistake named by file, line or case, field and reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepwise.evals.suite import SuiteError, load_suite


def test_a_yaml_list_a_mapping_with_cases_and_jsonl_are_the_same_suite(tmp_path: Path) -> None:
    # Given one case written in the three forms a suite takes
    (tmp_path / "listed.yaml").write_text("- {id: a, input: 'Hi?', expect: {answer_contains: Hello}}\n")
    (tmp_path / "mapped.yaml").write_text(
        "name: greetings\ncases:\n  - {id: a, input: 'Hi?', expect: {answer_contains: Hello}}\n"
    )
    (tmp_path / "lines.jsonl").write_text(
        '\n{"id": "a", "input": {"question": "Hi?"}, "expect": {"answer_contains": "Hello"}}\n'
    )
    # When each is read
    suites = [load_suite(tmp_path / name) for name in ("listed.yaml", "mapped.yaml", "lines.jsonl")]
    # Then each holds the same case; a suite is named after its file unless it says otherwise
    assert {suite.cases[0].model_dump_json() for suite in suites} == {suites[0].cases[0].model_dump_json()}
    assert [suite.name for suite in suites] == ["listed", "greetings", "lines"]
    assert suites[0].cases[0].input is not None and suites[0].cases[0].input.question == "Hi?"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.jsonl", '{"id": "a", "input": "x"}\n{"id": "b",\n', "line 2 is not JSON"),
        ("bad.yaml", "cases: [\n", "not valid YAML at line 2"),
        ("bad.yaml", "just text\n", "a suite is a list of cases, or a mapping with cases:"),
        ("bad.yaml", "- {id: a}\n", "cases[0] (id a): give exactly one of input"),
        ("bad.yaml", "- {id: a, input: {question: ' '}}\n", "cases[0] (id a).input.question: must not be empty"),
        (
            "bad.yaml",
            "- {id: a, input: x, runs: 0}\n",
            "cases[0] (id a).runs: Input should be greater than or equal to 1",
        ),
        (
            "bad.yaml",
            "- {id: a, input: x, expect: {answer_schema: {type: 12}}}\n",
            "cases[0] (id a).expect.answer_schema: not a JSON schema",
        ),
    ],
)
def test_a_mistake_names_where_and_why(tmp_path: Path, name: str, text: str, message: str) -> None:
    # Given a suite file with a mistake
    path = tmp_path / name
    path.write_text(text)
    # When it is read, then the error names the file and the mistake
    with pytest.raises(SuiteError) as raised:
        load_suite(path)
    assert str(raised.value).startswith(f"{path}: ")
    assert message in str(raised.value)


def test_a_missing_suite_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="cannot read the suite"):
        load_suite(tmp_path / "nowhere.yaml")
