"""JSONPath as Step Functions uses it: paths that select (InputPath, OutputPath, `.$` template values)
and reference paths that name a single node (ResultPath, Choice `Variable`, ItemsPath, `...Path` fields).

Paths are parsed once at load time; evaluation raises `States.Runtime` when a single-node path finds
nothing, as Step Functions does. A path starting with `$$` reads the context object instead of the data.
Filter and script expressions (`[?(...)]`, `[(...)]`) are not supported and are refused at load time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from stepwise.local.asl.errors import AslDefinitionError, AslUnsupportedError, RuntimeFailure


@dataclass(frozen=True)
class _Field:
    name: str


@dataclass(frozen=True)
class _Index:
    index: int


@dataclass(frozen=True)
class _Wildcard:
    pass


@dataclass(frozen=True)
class _Slice:
    start: int | None
    stop: int | None
    step: int | None


@dataclass(frozen=True)
class _Union:
    keys: tuple[str | int, ...]


@dataclass(frozen=True)
class _Descend:
    """`..member`: the member applied to the node and to every node below it."""

    inner: _Member


_Member = _Field | _Index | _Wildcard | _Slice | _Union
_Segment = _Member | _Descend
_MISSING = object()


@dataclass(frozen=True)
class JsonPath:
    """A parsed path. `definite` paths select one node; the others select a list of nodes."""

    source: str
    reads_context: bool
    segments: tuple[_Segment, ...]

    @property
    def definite(self) -> bool:
        """True when the path names at most one node (only fields and indexes)."""
        return all(isinstance(segment, _Field | _Index) for segment in self.segments)

    def evaluate(self, data: Any, context: Any) -> Any:
        """The selected value; a list of matches for an indefinite path; `States.Runtime` if absent."""
        root = context if self.reads_context else data
        if not self.definite:
            return list(self._matches(root))
        found = self._lookup(root)
        if found is _MISSING:
            raise RuntimeFailure(f"The JSONPath {self.source!r} could not be found in the input")
        return found

    def is_present(self, data: Any, context: Any) -> bool:
        """Whether a definite path names an existing node (Choice `IsPresent`)."""
        return self._lookup(context if self.reads_context else data) is not _MISSING

    def assign(self, document: Any, value: Any) -> Any:
        """A copy of `document` with `value` placed at this reference path (ResultPath semantics).

        Only the containers along the path are copied; missing objects on the way are created.
        """
        if not self.segments:
            return value
        if not isinstance(document, dict):
            raise RuntimeFailure(f"Unable to apply ResultPath {self.source!r}: the state input is not a JSON object")
        return _assign_into(document, self.segments, value, self.source)

    def _lookup(self, root: Any) -> Any:
        node = root
        for segment in self.segments:
            node = _child(node, segment)
            if node is _MISSING:
                return _MISSING
        return node

    def _matches(self, root: Any) -> Iterator[Any]:
        nodes = [root]
        for segment in self.segments:
            nodes = [found for node in nodes for found in _select(node, segment)]
        yield from nodes


def _child(node: Any, segment: _Segment) -> Any:
    if isinstance(segment, _Field):
        return node.get(segment.name, _MISSING) if isinstance(node, dict) else _MISSING
    if isinstance(segment, _Index) and isinstance(node, list) and -len(node) <= segment.index < len(node):
        return node[segment.index]
    return _MISSING


def _select(node: Any, segment: _Segment) -> list[Any]:
    if isinstance(segment, _Field | _Index):
        found = _child(node, segment)
        return [] if found is _MISSING else [found]
    if isinstance(segment, _Wildcard):
        if isinstance(node, dict):
            return list(node.values())
        return list(node) if isinstance(node, list) else []
    if isinstance(segment, _Slice):
        return node[segment.start : segment.stop : segment.step] if isinstance(node, list) else []
    if isinstance(segment, _Union):
        keys = (_Field(key) if isinstance(key, str) else _Index(key) for key in segment.keys)
        return [found for key in keys for found in _select(node, key)]
    return [found for each in _descendants(node) for found in _select(each, segment.inner)]


def _descendants(node: Any) -> Iterator[Any]:
    yield node
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in children:
        yield from _descendants(child)


def _assign_into(container: Any, segments: tuple[_Segment, ...], value: Any, source: str) -> Any:
    head, rest = segments[0], segments[1:]
    if isinstance(head, _Field) and isinstance(container, dict):
        copied = dict(container)
        if rest:
            copied[head.name] = _assign_into(copied.get(head.name, {}), rest, value, source)
        else:
            copied[head.name] = value
        return copied
    if isinstance(head, _Index) and isinstance(container, list) and -len(container) <= head.index < len(container):
        copied_list = list(container)
        copied_list[head.index] = _assign_into(copied_list[head.index], rest, value, source) if rest else value
        return copied_list
    raise RuntimeFailure(f"Unable to apply ResultPath {source!r}: a node on the path is not a container")


def parse_path(text: str) -> JsonPath:
    """Parse a JSONPath (`$`, `$$`, `.name`, `['name']`, `[0]`, `[*]`, `.*`, `..name`, slices, unions)."""
    if not isinstance(text, str) or not text.startswith("$"):
        raise AslDefinitionError(f"path {text!r} must be a string starting with '$'")
    reads_context = text.startswith("$$")
    position = 2 if reads_context else 1
    segments: list[_Segment] = []
    while position < len(text):
        if text.startswith("..", position):
            inner, position = _parse_member(text, position + 2)
            segments.append(_Descend(inner))
        elif text[position] in ".[":
            segment, position = _parse_member(text, position + (text[position] == "."))
            segments.append(segment)
        else:
            raise AslDefinitionError(f"path {text!r} has an unexpected character at offset {position}")
    return JsonPath(source=text, reads_context=reads_context, segments=tuple(segments))


def parse_reference_path(text: str) -> JsonPath:
    """Parse a reference path: a path to exactly one node of the data (no `$$`, wildcards or slices)."""
    path = parse_path(text)
    if path.reads_context or not path.definite:
        raise AslDefinitionError(f"{text!r} is not a reference path (only $, .name, ['name'] and [n])")
    return path


def _parse_member(text: str, position: int) -> tuple[_Member, int]:
    if position < len(text) and text[position] == "[":
        return _parse_bracket(text, position)
    end = position
    while end < len(text) and text[end] not in ".[":
        end += 1
    name = text[position:end]
    if not name:
        raise AslDefinitionError(f"path {text!r} has an empty member name at offset {position}")
    return (_Wildcard() if name == "*" else _Field(name)), end


def _parse_bracket(text: str, position: int) -> tuple[_Member, int]:
    body, end = _bracket_body(text, position)
    stripped = body.strip()
    if stripped.startswith(("?", "(")):
        raise AslUnsupportedError(f"path {text!r}: filter and script expressions are not supported")
    if stripped == "*":
        return _Wildcard(), end
    if stripped.startswith(("'", '"')):
        names = tuple(_split_quoted_names(stripped, text))
        return (_Field(names[0]) if len(names) == 1 else _Union(names)), end
    try:
        if ":" in stripped:
            parts = [int(part) if part.strip() else None for part in stripped.split(":")]
            if len(parts) > 3:
                raise ValueError(stripped)
            parts += [None] * (3 - len(parts))
            return _Slice(parts[0], parts[1], parts[2]), end
        indexes = tuple(int(part) for part in stripped.split(","))
    except ValueError:
        raise AslDefinitionError(f"path {text!r} has an invalid subscript [{body}]") from None
    return (_Index(indexes[0]) if len(indexes) == 1 else _Union(indexes)), end


def _bracket_body(text: str, position: int) -> tuple[str, int]:
    """The text between `[` at `position` and its `]`, skipping brackets inside quotes."""
    quote: str | None = None
    index = position + 1
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "]":
            return text[position + 1 : index], index + 1
        index += 1
    raise AslDefinitionError(f"path {text!r} has an unclosed '['")


def _split_quoted_names(body: str, text: str) -> Iterator[str]:
    index = 0
    while index < len(body):
        quote = body[index]
        if quote not in "'\"":
            raise AslDefinitionError(f"path {text!r} mixes quoted names with other subscripts")
        name: list[str] = []
        index += 1
        while index < len(body) and body[index] != quote:
            if body[index] == "\\" and index + 1 < len(body):
                index += 1
            name.append(body[index])
            index += 1
        if index >= len(body):
            raise AslDefinitionError(f"path {text!r} has an unclosed quote")
        yield "".join(name)
        index += 1
        while index < len(body) and body[index] in " ,":
            index += 1
