"""The API's response models ignore fields they do not declare, so that a client (`stepwise eval --against`) reads
an answer from a newer server. The server's own code must then name only declared fields: a keyword given to the
wrong model is dropped without a word, as `searched_until` was when it was declared on `ApprovalList` and given to
`RunList`, and the console's "search older runs" link never showed."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from pydantic import BaseModel

import stepwise
from stepwise.models import api_responses, chat_api

# The models of the run API's answers and of the chat completions API's (both ignore what they do not declare).
RESPONSE_MODELS = {
    name: model
    for module in (api_responses, chat_api)
    for name, model in inspect.getmembers(module, inspect.isclass)
    if issubclass(model, BaseModel)
    and model.__module__ == module.__name__
    and model.model_config.get("extra") != "allow"
}
PACKAGE = Path(stepwise.__file__).parent


def _keywords_given_to_response_models() -> list[tuple[str, str, str]]:
    """(where, model, keyword) for each keyword the package's code builds a response model with."""
    given: list[tuple[str, str, str]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in RESPONSE_MODELS:
                where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
                given += [(where, node.func.id, keyword.arg) for keyword in node.keywords if keyword.arg]
    return given


def test_every_field_the_server_builds_a_response_with_is_declared_by_that_response() -> None:
    # Given every place the package builds an API response model with named fields
    given = _keywords_given_to_response_models()
    # When each field named is looked up in the model it is given to
    undeclared = [
        (where, model, field) for where, model, field in given if field not in RESPONSE_MODELS[model].model_fields
    ]
    # Then every one is a field of that model (and the responses are built somewhere at all)
    assert len({model for _, model, _ in given}) >= 20
    assert undeclared == []
