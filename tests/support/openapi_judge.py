"""An independent judge of HTTP requests: does the API's own OpenAPI description allow this request?

The judge is ``openapi-core`` (PyPI), which reads each request as a server would (path, query, headers,
cookies, body, security) and validates it against the description. Two rules are added to it:

- a query parameter the operation does not declare is refused (openapi-core ignores unknown ones, but a
  real API would read them as a mistake or ignore what the model meant to send);
- parameters openapi-core cannot read are judged by the API's documented convention instead. openapi-core
  0.23 cannot read a ``deepObject`` parameter whose schema is not a plain object (Stripe's ``created``,
  an ``anyOf`` of a range object and an integer, and ``expand``, an array): it refuses every request to an
  operation declaring one, sent or not. Such a parameter is taken out of openapi-core's copy of the
  description and judged by Stripe's convention (docs.stripe.com/api/expanding_objects,
  docs.stripe.com/api/pagination/search): an array as ``name[]=v`` or ``name[0]=v&name[1]=w``, an object as
  ``name[field]=v`` (nested ``name[a][b]=v``), a scalar as ``name=v``; the value rebuilt from those keys must
  be valid against the parameter's schema. A bare ``name=v`` for an array (repeated keys) is refused: the
  API reads only one of them.
- openapi-core takes ``readOnly`` on a parameter's own schema (GitHub's ``alert_number`` path parameter)
  as a read-only property written in a request, and refuses every value; OpenAPI defines ``readOnly``
  for the properties of an object, so the judge's copy of such a parameter's schema leaves it out.

Where openapi-core reads form-style values it does so from the decoded query, so a ``,`` sent as ``%2C``
inside an unexploded array item is beyond it; `tests/unit/tools/test_parameter_styles.py` checks that.
"""

from __future__ import annotations

import copy
import re
from typing import Any
from urllib.parse import parse_qsl, unquote

from openapi_core import Config, OpenAPI
from openapi_core.testing import MockRequest
from openapi_schema_validator import OAS30Validator, OAS31Validator

from tests.support.tool_server import RecordedRequest

_BRACKETED = re.compile(r"^([^\[\]]+)((?:\[[^\[\]]*\])+)$")
_METHODS = ("get", "put", "post", "delete", "patch")
# Formats the descriptions define beyond JSON Schema's, as their APIs document them (Discord's snowflake
# ids are decimal text, discord.com/developers/docs/reference#snowflakes).
_FORMATS = {"snowflake": lambda value: isinstance(value, str) and value.isdigit()}


class OpenApiJudge:
    """Judges requests sent to ``base_url`` against ``document`` (a parsed OpenAPI 3.0 or 3.1 description)."""

    def __init__(self, document: dict[str, Any], base_url: str) -> None:
        self._document = document
        version_3_1 = str(document.get("openapi", "")).startswith("3.1")
        self._schema_validator = OAS31Validator if version_3_1 else OAS30Validator
        judged = dict(document)
        judged["servers"] = [{"url": base_url}]
        judged["paths"] = dict(document.get("paths") or {})
        # (method, path template) -> the parameters openapi-core cannot read, judged by convention instead
        self.unreadable: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._declared: dict[tuple[str, str], set[str]] = {}
        # (method, path template) -> the form body schema openapi-core cannot read, judged by convention
        self.form_bodies: dict[tuple[str, str], dict[str, Any]] = {}
        # each operation's path as a pattern, with its multi-segment parameters (GitHub's x-multi-segment)
        self._patterns: list[tuple[tuple[str, str], re.Pattern[str], set[str]]] = []
        for template, item in list(judged["paths"].items()):
            item = copy.copy(self._resolved(item))
            shared = [self._resolved(parameter) for parameter in item.pop("parameters", None) or ()]
            for method in (key for key in item if key in _METHODS):
                operation = dict(item[method])
                parameters = shared + [self._resolved(p) for p in operation.get("parameters") or ()]
                key = (method.upper(), template)
                self._declared[key] = {p["name"] for p in parameters if p.get("in") == "query"}
                multi = {p["name"] for p in parameters if p.get("x-multi-segment") is True}
                self._patterns.append((key, re.compile(_template_pattern(template, multi)), multi))
                parameters = [self._without_read_only(p) for p in parameters]
                gaps = [p for p in parameters if _unreadable_by_openapi_core(p, self._resolved)]
                if gaps:
                    self.unreadable[key] = gaps
                names = {p["name"] for p in gaps}
                operation["parameters"] = [p for p in parameters if p["name"] not in names]
                form_schema = self._deep_object_form_body(operation)
                if form_schema is not None:
                    self.form_bodies[key] = form_schema
                    del operation["requestBody"]
                item[method] = operation
            judged["paths"][template] = item
        config = Config(
            spec_validator_cls=None,
            extra_format_validators=_FORMATS,
            extra_format_unmarshallers={name: str for name in _FORMATS},
        )
        self._api = OpenAPI.from_dict(judged, config=config)
        self._base_path = re.sub(r"^https?://[^/]+", "", base_url).rstrip("/")
        self._host_url = base_url[: len(base_url) - len(self._base_path)] if self._base_path else base_url

    def problems(self, request: RecordedRequest) -> list[str]:
        """Why the description does not allow ``request``; empty when it does."""
        pairs = parse_qsl(request.raw_query, keep_blank_values=True)
        operation, path = self._operation_of(request)
        if path is None:
            return [f"{request.path}: a multi-segment path parameter holds an empty, '.' or '..' segment"]
        candidate = MockRequest(
            self._host_url,
            request.method.lower(),
            path,
            args=pairs,  # type: ignore[arg-type]  # a list of pairs keeps repeated keys
            headers=request.headers,
            cookies=_cookies(request.headers.get("cookie", "")),
            data=request.body or None,
            content_type=request.headers.get("content-type", "application/json").split(";")[0],
        )
        try:
            result = self._api.unmarshal_request(candidate)
        except Exception as exc:  # the path or operation is not in the description
            return [f"{type(exc).__name__}: {exc}"]
        problems = [_describe(error) for error in result.errors]
        if operation is None:
            return problems
        declared = self._declared.get(operation, set())
        for key in dict.fromkeys(key for key, _ in pairs):
            if key not in declared and _base_name(key) not in declared:
                problems.append(f"query parameter {key!r} is not declared by {operation[0]} {operation[1]}")
        for parameter in self.unreadable.get(operation, []):
            problems.extend(self._by_convention(parameter, pairs))
        if operation in self.form_bodies:
            problems.extend(self._form_body_by_convention(self.form_bodies[operation], request.body))
        return problems

    def _operation_of(self, request: RecordedRequest) -> tuple[tuple[str, str] | None, str | None]:
        """The operation a request is for, and its path as openapi-core can match it (None: refused).

        openapi-core matches a path parameter within one segment; a multi-segment one (a file path in
        GitHub's ``/contents/{path}``, sent with its ``/``) is handed to it with each ``/`` as ``%2F``. As
        OpenAPI says, a concrete path wins over a templated one (``/addresses/set.json`` over
        ``/addresses/{address_id}.json``).
        """
        path = request.path[len(self._base_path) :] if self._base_path else request.path
        candidates = [
            (template.count("{"), method, template, match, multi)
            for (method, template), pattern, multi in self._patterns
            if method == request.method and (match := pattern.fullmatch(path)) is not None
        ]
        if candidates:
            _, method, template, match, multi = min(candidates, key=lambda candidate: candidate[0])
            rewritten = request.path
            for name in multi:
                value = match.group(_group(name))
                if any(segment in ("", ".", "..") for segment in value.split("/")):
                    return (method, template), None
                rewritten = rewritten.replace(value, value.replace("/", "%2F"), 1)
            return (method, template), rewritten
        return None, request.path

    def _deep_object_form_body(self, operation: dict[str, Any]) -> dict[str, Any] | None:
        """The schema of a form body whose fields use ``deepObject`` (openapi-core 0.23 cannot read them)."""
        body = self._resolved(operation.get("requestBody"))
        media = ((body or {}).get("content") or {}).get("application/x-www-form-urlencoded")
        encodings = (media or {}).get("encoding") or {}
        if media is None or not any(encoding.get("style") == "deepObject" for encoding in encodings.values()):
            return None
        return _inlined(media.get("schema") or {}, self._document)

    def _form_body_by_convention(self, schema: dict[str, Any], body: bytes) -> list[str]:
        """A form body read back from Stripe's brackets (``metadata[order]=1``) and checked against its schema."""
        fields: dict[str, list[tuple[str, str]]] = {}
        value: dict[str, Any] = {}
        for key, text in parse_qsl(body.decode("ascii"), keep_blank_values=True):
            name = _base_name(key)
            if name == key:
                value[name] = text
            else:
                fields.setdefault(name, []).append((key[len(name) :], text))
        for name, nested in fields.items():
            value[name] = _rebuilt(nested)
        errors = self._schema_validator(schema).iter_errors(_typed(value, schema))
        return [f"body: {error.message}" for error in errors]

    def _by_convention(self, parameter: dict[str, Any], pairs: list[tuple[str, str]]) -> list[str]:
        """Judge a parameter openapi-core cannot read by the bracket convention (see the module docstring)."""
        name = parameter["name"]
        schema = _inlined(parameter.get("schema") or {}, self._document)
        bare = [value for key, value in pairs if key == name]
        nested = [(key[len(name) :], value) for key, value in pairs if key.startswith(name + "[")]
        if not bare and not nested:
            return []
        if bare and nested:
            return [f"{name}: sent both bare and with brackets"]
        if bare and len(bare) > 1:
            return [f"{name}: sent {len(bare)} times as a bare key; the API reads one (use {name}[] or {name}[0])"]
        value: Any = bare[0] if bare else _rebuilt(nested)
        if value is None:
            return [f"{name}: brackets {[key for key, _ in nested]} follow no convention the API reads"]
        errors = [error.message for error in self._schema_validator(schema).iter_errors(_typed(value, schema))]
        return [f"{name}: {message}" for message in errors]

    def _without_read_only(self, parameter: dict[str, Any]) -> dict[str, Any]:
        schema = self._resolved(parameter.get("schema"))
        if not isinstance(schema, dict) or "readOnly" not in schema:
            return parameter
        return {**parameter, "schema": {key: value for key, value in schema.items() if key != "readOnly"}}

    def _resolved(self, node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            node = _pointer(self._document, node["$ref"])
        return node


def _unreadable_by_openapi_core(parameter: dict[str, Any], resolve: Any) -> bool:
    if parameter.get("in") != "query" or parameter.get("style") != "deepObject":
        return False
    schema = resolve(parameter.get("schema") or {})
    return schema.get("type") != "object" or any(key in schema for key in ("anyOf", "oneOf", "allOf"))


def _describe(error: Exception) -> str:
    cause = error.__cause__
    details = getattr(cause, "schema_errors", None) or ([cause] if cause is not None else [])
    reasons = "; ".join(str(getattr(detail, "message", detail)) for detail in details)
    return f"{error}" + (f": {reasons}" if reasons else "")


def _base_name(key: str) -> str:
    match = _BRACKETED.match(key)
    return match.group(1) if match else key


def _group(name: str) -> str:
    return "p_" + "".join(character if character.isalnum() else "_" for character in name)


def _template_pattern(template: str, multi_segment: set[str]) -> str:
    """A regular expression of a path template; a multi-segment parameter may span segments."""
    pattern = ""
    for literal, name in re.findall(r"([^{]*)(?:\{([^{}]+)\})?", template):
        pattern += re.escape(literal)
        if name:
            pattern += f"(?P<{_group(name)}>.+)" if name in multi_segment else "[^/]+"
    return pattern


def _cookies(header: str) -> dict[str, str]:
    pairs = (part.strip().split("=", 1) for part in header.split(";") if "=" in part)
    return {name: unquote(value) for name, value in pairs}


def _pointer(document: dict[str, Any], reference: str) -> Any:
    node: Any = document
    for part in reference.lstrip("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _inlined(schema: Any, document: dict[str, Any]) -> Any:
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _inlined(_pointer(document, schema["$ref"]), document)
        return {key: _inlined(value, document) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_inlined(item, document) for item in schema]
    return schema


def _rebuilt(nested: list[tuple[str, str]]) -> Any:
    """The value bracket keys describe (``[gt]``, ``[0]``, ``[]``, ``[a][b]``); None when they mix kinds."""
    root: dict[str, Any] = {}
    for brackets, value in nested:
        keys = re.findall(r"\[([^\[\]]*)\]", brackets)
        node = root
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node.setdefault(keys[-1], []).append(value) if keys[-1] == "" else node.__setitem__(keys[-1], value)
    return _as_lists(root)


def _as_lists(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if list(node) == [""]:
        return node[""]
    if node and all(key.isdigit() for key in node):
        indices = sorted(int(key) for key in node)
        if indices != list(range(len(indices))):
            return None
        return [_as_lists(node[str(index)]) for index in indices]
    return {key: _as_lists(value) for key, value in node.items()}


def _typed(value: Any, schema: dict[str, Any]) -> Any:
    """Query text read as the schema's types (a form value is text; ``1`` is an integer where one is expected)."""
    options = [schema, *schema.get("anyOf", []), *schema.get("oneOf", [])]
    if isinstance(value, str):
        if any(option.get("type") == "integer" for option in options) and re.fullmatch(r"-?\d+", value):
            return int(value)
        return value
    if isinstance(value, list):
        items: dict[str, Any] = next((option["items"] for option in options if option.get("type") == "array"), {})
        return [_typed(item, items) for item in value]
    if isinstance(value, dict):
        properties: dict[str, Any] = {}
        for option in options:
            properties.update(option.get("properties") or {})
        return {key: _typed(item, properties.get(key, {})) for key, item in value.items()}
    return value
