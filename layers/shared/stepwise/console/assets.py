"""The console's files and the headers they are served with.

The Content-Security-Policy allows scripts, styles and fetches from the page's own origin only, and no
inline script or style, no frame, no form target, no plugin: text a model or a tool wrote is inserted as
text (`textContent`), and were markup ever to slip through, it could neither run a script nor load
anything from elsewhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    # The files change with a deployment; a short cache keeps a new version from waiting a day.
    "Cache-Control": "max-age=300",
}
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
INDEX = "index.html"
# What a request may name: one file of the folder, no path, with a known extension.
_ASSET_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*\.[a-z]+$")


@dataclass(frozen=True)
class ConsoleAsset:
    """One file of the console, as served."""

    name: str
    content_type: str
    body: str


def console_asset(name: str) -> ConsoleAsset | None:
    """The console file `name` (the page itself for an empty name); None for a name it does not have."""
    name = name or INDEX
    if not _ASSET_NAME.fullmatch(name):
        return None
    content_type = CONTENT_TYPES.get(name[name.rfind(".") :])
    file = resources.files(__package__).joinpath("static", name)
    if content_type is None or not file.is_file():
        return None
    return ConsoleAsset(name=name, content_type=content_type, body=file.read_text(encoding="utf-8"))
