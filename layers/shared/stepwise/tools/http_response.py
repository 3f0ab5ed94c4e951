"""Turning an HTTP response into text a model can read: capped, compact, and never raw binary."""

from __future__ import annotations

import codecs
import json
import time
import zlib

import httpx

from stepwise.config.redaction import Redactor
from stepwise.errors import ToolError
from stepwise.inputs.json_limits import JsonLimitExceeded, load_json

ERROR_SNIPPET_CHARS = 500

_BINARY_MEDIA_PREFIXES = ("image/", "audio/", "video/", "font/")
_BINARY_MEDIA_TYPES = {
    "application/octet-stream",
    "application/pdf",
    "application/zip",
    "application/gzip",
    "application/x-tar",
    "application/x-protobuf",
    "application/vnd.ms-excel",
}


class DeadlinePassed(Exception):
    """The call's overall time ran out while the body was still arriving."""


def read_capped_body(response: httpx.Response, *, max_bytes: int, deadline: float) -> tuple[bytes, bool]:
    """Read at most ``max_bytes`` of a streamed body, decoded; say whether more was there.

    Reading stops as soon as the cap is passed, so a huge body costs no more than the cap. A gzip or
    deflate body (from a server that ignores ``Accept-Encoding: identity``) is inflated only as far as
    the cap, never a whole network chunk at once: a compression bomb costs no more than the cap either.
    Any other content coding raises `ToolError`. The ``deadline`` (a `time.monotonic` value) bounds a
    server that drips bytes slowly enough to dodge the per-read timeout.
    """
    decoder = _BoundedDecoder(response.headers.get("content-encoding", ""))
    body = bytearray()
    for chunk in response.iter_raw():
        body.extend(decoder.decode(chunk, max_length=max_bytes + 1 - len(body)))
        if len(body) > max_bytes:
            return bytes(body[:max_bytes]), True
        if time.monotonic() > deadline:
            raise DeadlinePassed
    return bytes(body), False


class _BoundedDecoder:
    """Undoes one content coding (none, gzip or deflate), giving out at most ``max_length`` bytes a call."""

    def __init__(self, content_encoding: str) -> None:
        coding = content_encoding.strip().lower()
        self._inflater: zlib._Decompress | None = None
        self._raw_deflate_fallback = False
        if coding in ("gzip", "x-gzip"):
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif coding == "deflate":
            # "deflate" should be zlib-wrapped, but some servers send a raw deflate stream (as httpx allows).
            self._inflater = zlib.decompressobj()
            self._raw_deflate_fallback = True
        elif coding not in ("", "identity"):
            raise ToolError(f"the response is encoded as {coding!r}, which cannot be read within the size cap")

    def decode(self, data: bytes, *, max_length: int) -> bytes:
        """Decoded bytes of ``data``; fewer than ``max_length`` means all of it was decoded."""
        if self._inflater is None:
            return data
        try:
            decoded = self._inflater.decompress(data, max_length)
        except zlib.error:
            if not self._raw_deflate_fallback:
                raise ToolError("the response's compressed body is corrupt") from None
            self._raw_deflate_fallback = False
            self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
            return self.decode(data, max_length=max_length)
        # Only the start of a stream tells a zlib wrapper from raw deflate; later errors are corruption.
        self._raw_deflate_fallback = False
        return decoded


def describe_body(body: bytes, *, content_type: str, truncated: bool, max_bytes: int, redactor: Redactor) -> str:
    """The body as text: JSON re-serialised compactly, text as it is, binary described in one line.

    Known secrets are redacted here, right after decoding, while the end of a capped body is still the
    end of the text: a secret the cap split in two is then recognised by its surviving beginning.
    """
    media_type, charset = _parse_content_type(content_type)
    if _is_binary_media(media_type):
        return _binary_description(body, media_type, truncated)
    decoded = _decode(body, charset, truncated)
    if decoded is None:
        return _binary_description(body, media_type, truncated)
    text = redactor.redact(decoded, cut_at_end=truncated)
    if truncated:
        return f"{text}…[truncated: the response was longer than {max_bytes} bytes]"
    if media_type == "application/json" or media_type.endswith("+json") or text.lstrip()[:1] in ("{", "["):
        try:
            document = load_json(text, max_bytes=max_bytes, what="the JSON response")
        except JsonLimitExceeded as exc:
            return f"[{exc}; shown as it came]\n{text}"
        except ValueError:
            return text
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    return text


def error_snippet(text: str) -> str:
    """The beginning of an error body, enough to tell the model what the server said."""
    return text if len(text) <= ERROR_SNIPPET_CHARS else f"{text[:ERROR_SNIPPET_CHARS]}…"


def _parse_content_type(content_type: str) -> tuple[str, str]:
    media_type, _, parameters = content_type.partition(";")
    charset = "utf-8"
    for parameter in parameters.split(";"):
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip('"')
    return media_type.strip().lower(), charset


def _is_binary_media(media_type: str) -> bool:
    return media_type in _BINARY_MEDIA_TYPES or media_type.startswith(_BINARY_MEDIA_PREFIXES)


def _decode(body: bytes, charset: str, truncated: bool) -> str | None:
    try:
        decoder = codecs.getincrementaldecoder(charset)(errors="strict")
    except LookupError:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    try:
        # Not final when truncated: the cap may have split a multi-byte character, which is dropped.
        text = decoder.decode(body, final=not truncated)
    except UnicodeDecodeError:
        return None
    if "\x00" in text:
        return None
    return text


def _binary_description(body: bytes, media_type: str, truncated: bool) -> str:
    size = f"more than {len(body)}" if truncated else str(len(body))
    return f"[binary response: {size} bytes of {media_type or 'unknown type'}, not shown]"
