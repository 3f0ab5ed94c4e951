"""Reading OpenAPI documents: from the config directory, an S3 object, an https URL, or inline.

A document is read when the tool registry is built, that is once per Lambda container (cold start), and
kept by the loader so that two sources naming the same document (say, with different ``include``
filters) read it once. Every failure is a `ConfigError` naming the source and the reason.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from stepwise.config.openapi_source import DEFAULT_MAX_DOCUMENT_BYTES, OpenApiSourceConfig
from stepwise.errors import ConfigError, ToolError
from stepwise.inputs.json_limits import JsonLimitExceeded, check_depth, load_json, value_depth
from stepwise.inputs.text_policy import clean_value
from stepwise.inputs.yaml_aliases import AliasExpansionExceeded, check_alias_expansion
from stepwise.tools.guards import HostResolver, Origin, check_same_origin, checked_addresses, system_resolver
from stepwise.tools.http_response import DeadlinePassed, read_capped_body

FETCH_TIMEOUT_SECONDS = 10.0
MAX_FETCH_REDIRECTS = 3
_REDIRECT_STATUSES = {301, 302, 303, 307, 308}


@dataclass(frozen=True)
class LoadedDocument:
    """A parsed document and the URL it came from (relative ``servers`` URLs are resolved against it)."""

    document: dict[str, Any]
    location: str | None = None


def default_s3_client() -> Any:
    """An S3 client for the Lambda's own region and credentials."""
    import boto3  # deferred: only configurations with s3:// sources pay for it

    return boto3.client("s3")


class _DocumentYamlLoader(yaml.SafeLoader):
    """Safe YAML that keeps dates as text: ``2024-01-01`` in an enum or example must stay JSON."""


_DocumentYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


_YAML_BASE: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _FastDocumentYamlLoader(_YAML_BASE):  # type: ignore[valid-type,misc]
    """The same rules on libyaml when it is there: a large YAML document parses in seconds, not minutes."""


_FastDocumentYamlLoader.yaml_implicit_resolvers = _DocumentYamlLoader.yaml_implicit_resolvers

# Schemas of real APIs nest deeper than requests do (GitHub's about 20 levels); far past this is an attack
# or a generator gone wrong.
MAX_DOCUMENT_DEPTH = 128
# In JSON text, a NUL or a lone surrogate can only come from an escape: `\u0000` or `\ud800`-`\udfff`.
_UNENCODABLE_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


def _parsed(text: str, max_bytes: int) -> tuple[Any, bool]:
    """The document's value, and whether it may hold text the text policy must clean.

    JSON (what large descriptions are published as) is parsed as JSON, since YAML's parser takes minutes
    over several megabytes; anything else as YAML.
    """
    if text.lstrip().startswith("{"):
        try:
            document = load_json(text, max_bytes=max_bytes, max_depth=MAX_DOCUMENT_DEPTH, what="the document")
            # Cleaning copies the whole document (a second GitHub description in memory, and a second
            # of walking it); JSON without such an escape has nothing to clean.
            return document, _UNENCODABLE_ESCAPE.search(text) is not None
        except JsonLimitExceeded:
            raise
        except ValueError:
            pass  # YAML flow style also starts with a brace
    document = yaml.load(text, Loader=_FastDocumentYamlLoader)  # a SafeLoader: no arbitrary objects
    check_alias_expansion(document, what="the document")
    check_depth(value_depth(document), max_depth=MAX_DOCUMENT_DEPTH, what="the document")
    return document, True


def parse_document(text: str, *, where: str, max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES) -> dict[str, Any]:
    """Parse a JSON or YAML OpenAPI 3.0/3.1 document; `ConfigError` naming ``where`` otherwise.

    The document is held to `MAX_DOCUMENT_DEPTH` levels and its YAML aliases to `MAX_EXPANDED_VALUES`
    values once expanded, and text that cannot be encoded (it would
    break every request to the model that offers these tools) is replaced by the text policy.
    """
    try:
        document, may_need_cleaning = _parsed(text, max_bytes)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"openapi {where}: not valid JSON or YAML{at}") from None
    except (JsonLimitExceeded, AliasExpansionExceeded) as exc:
        raise ConfigError(f"openapi {where}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"openapi {where}: nested too deeply; the limit is {MAX_DOCUMENT_DEPTH} levels") from None
    if may_need_cleaning:
        document, _ = clean_value(document)
    return checked_document(document, where=where)


def checked_document(document: object, *, where: str) -> dict[str, Any]:
    """``document`` if it is an OpenAPI 3.0/3.1 document; `ConfigError` naming ``where`` otherwise."""
    if not isinstance(document, dict):
        raise ConfigError(f"openapi {where}: the document must be a mapping")
    version = document.get("openapi")
    if "swagger" in document:
        raise ConfigError(f"openapi {where}: Swagger 2.0 documents are not supported; convert it to OpenAPI 3")
    if not isinstance(version, str) or not version.startswith("3."):
        raise ConfigError(f"openapi {where}: 'openapi' must name version 3.0 or 3.1, not {version!r}")
    if not isinstance(document.get("paths", {}), dict):
        raise ConfigError(f"openapi {where}: 'paths' must be a mapping")
    return document


class DocumentLoader:
    """Reads each OpenAPI source once; the S3 client is made on first use when not injected."""

    def __init__(
        self,
        *,
        config_dir: Path,
        http_client: httpx.Client | None = None,
        s3_client: Any = None,
        s3_client_factory: Callable[[], Any] = default_s3_client,
        host_resolver: HostResolver = system_resolver,
    ) -> None:
        self._config_dir = config_dir.resolve()
        self._http_client = http_client
        self._s3_client = s3_client
        self._s3_client_factory = s3_client_factory
        self._host_resolver = host_resolver
        self._documents: dict[tuple[str, bool], LoadedDocument] = {}

    def load(self, source: OpenApiSourceConfig) -> LoadedDocument:
        """The parsed document of ``source``; `ConfigError` when it cannot be read or is not OpenAPI 3."""
        if source.document is not None:
            return LoadedDocument(checked_document(source.document, where=source.describe()))
        name = source.describe()
        # The `internal` flag is part of the key: a URL allowed for an internal source must still be
        # refused for another source that is not internal.
        key = (name, source.internal)
        if key not in self._documents:
            cap = source.max_document_bytes
            if name.startswith("s3://"):
                text = self._read_s3(name, cap)
            elif name.startswith(("https://", "http://")):
                text = self._fetch(name, source.internal, cap)
            else:
                text = self._read_file(name, cap)
            location = name if name.startswith(("https://", "http://")) else None
            loaded = LoadedDocument(parse_document(text, where=name, max_bytes=cap), location)
            self._documents[key] = loaded
        return self._documents[key]

    def _read_file(self, name: str, cap: int) -> str:
        path = (self._config_dir / name).resolve()
        if not path.is_relative_to(self._config_dir):
            raise ConfigError(f"openapi {name}: the file is outside the config directory {self._config_dir}")
        try:
            with path.open("rb") as file:
                data = file.read(cap + 1)
        except OSError as exc:
            raise ConfigError(f"openapi {name}: cannot read {path}: {exc.strerror}") from None
        return _decoded(data, name, cap)

    def _read_s3(self, name: str, cap: int) -> str:
        bucket, _, key = name.removeprefix("s3://").partition("/")
        if self._s3_client is None:
            self._s3_client = self._s3_client_factory()
        try:
            response = self._s3_client.get_object(Bucket=bucket, Key=key)
            data = response["Body"].read(cap + 1)
        except Exception as exc:
            code = getattr(exc, "response", {}).get("Error", {}).get("Code")
            raise ConfigError(f"openapi {name}: cannot read the S3 object: {code or type(exc).__name__}") from None
        return _decoded(data, name, cap)

    def _fetch(self, url: str, internal: bool, cap: int) -> str:
        client = self._http_client if self._http_client is not None else httpx.Client(trust_env=False)
        target = httpx.URL(url)
        origin = Origin.of(target)
        deadline = time.monotonic() + FETCH_TIMEOUT_SECONDS
        try:
            for _ in range(MAX_FETCH_REDIRECTS + 1):
                if not internal:
                    checked_addresses(target.host, origin.port, resolver=self._host_resolver)
                request = client.build_request(
                    "GET",
                    target,
                    headers={"Accept": "application/json, application/yaml;q=0.9, */*;q=0.5"},
                    timeout=httpx.Timeout(FETCH_TIMEOUT_SECONDS),
                )
                response = client.send(request, stream=True, follow_redirects=False)
                try:
                    location = response.headers.get("location")
                    if response.status_code in _REDIRECT_STATUSES and location:
                        target = target.join(location)
                        check_same_origin(target, origin, what="a redirect")
                        continue
                    if not response.is_success:
                        raise ConfigError(f"openapi {url}: the server answered HTTP {response.status_code}")
                    data, truncated = read_capped_body(response, max_bytes=cap, deadline=deadline)
                finally:
                    response.close()
                if truncated:
                    raise ConfigError(_too_large(url, cap))
                return _decoded(data, url, cap)
        except ToolError as exc:
            raise ConfigError(f"openapi {url}: {exc}") from None
        except (httpx.HTTPError, DeadlinePassed) as exc:
            raise ConfigError(f"openapi {url}: the document could not be fetched: {type(exc).__name__}") from None
        finally:
            if client is not self._http_client:
                client.close()
        raise ConfigError(f"openapi {url}: more than {MAX_FETCH_REDIRECTS} redirects")


def _too_large(name: str, cap: int) -> str:
    return f"openapi {name}: the document is larger than {cap} bytes (maxDocumentBytes)"


def _decoded(data: bytes, name: str, cap: int) -> str:
    if len(data) > cap:
        raise ConfigError(_too_large(name, cap))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"openapi {name}: the document is not UTF-8 text") from None
