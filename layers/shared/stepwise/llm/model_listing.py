"""A local server's own word on a model's context window, read from its model listing.

Asked only for a model whose window neither the configuration nor the catalog knows (`stepwise.steps.
learned_window`), in this order, each a documented endpoint of one server:

- vLLM (and SGLang): `GET {base_url}/models`, the model's entry's `max_model_len` (the window it serves,
  `--max-model-len`, not the model's trained one); hosted gateways list theirs there too (OpenRouter's and
  Together's `context_length`, Groq's `context_window`, Mistral's `max_context_length`);
- LM Studio: `GET {origin}/api/v0/models/{model}`, `loaded_context_length` (what the loaded model was given)
  else `max_context_length`;
- Ollama: `POST {origin}/api/show`: the `num_ctx` its parameters set, else Ollama's documented default of
  4,096 tokens, never more than the model's trained `<architecture>.context_length` (`model_info`). Ollama
  does not refuse a longer prompt, it drops its beginning; a smaller window only compacts sooner.

`origin` is `base_url` without its `/v1`. Nothing here raises: a server that answers none of these (or
slowly, or with anything unreadable) gives None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from stepwise.inputs.json_limits import load_json

# Ollama's context window when neither the model nor the server is told otherwise (its FAQ).
OLLAMA_DEFAULT_CONTEXT = 4096
# A listing is a small local answer; a server that takes longer is treated as having none.
LISTING_TIMEOUT_SECONDS = 3.0


def listed_window(client: httpx.Client, base_url: str, model: str, headers: dict[str, str]) -> int | None:
    """The window the server at `base_url` lists for `model`, or None when it lists none."""
    origin = base_url.removesuffix("/").removesuffix("/v1")
    asks: tuple[tuple[str, str, dict[str, str] | None, Callable[[Any], int | None]], ...] = (
        ("GET", f"{base_url}/models", None, lambda body: vllm_window(body, model)),
        ("GET", f"{origin}/api/v0/models/{model}", None, lm_studio_window),
        ("POST", f"{origin}/api/show", {"model": model}, ollama_window),
    )
    for method, url, question, read in asks:
        try:
            response = client.request(method, url, json=question, headers=headers, timeout=LISTING_TIMEOUT_SECONDS)
            window = read(load_json(response.content, what="a model listing")) if response.is_success else None
        except (httpx.HTTPError, ValueError):
            continue
        if window is not None:
            return window
    return None


# The window's name in an OpenAI-style listing's entry: vLLM's (and SGLang's), OpenRouter's and Together's,
# Groq's, Mistral's.
_LISTED_WINDOW_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")


def vllm_window(body: Any, model: str) -> int | None:
    """The window of `model`'s entry in an OpenAI-style `{"data": [...]}` listing: vLLM's `max_model_len`, or
    the field a hosted gateway names it by (`_LISTED_WINDOW_FIELDS`)."""
    entries = body.get("data") if isinstance(body, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            return next(
                (window for name in _LISTED_WINDOW_FIELDS if (window := _positive(entry.get(name))) is not None),
                None,
            )
    return None


def lm_studio_window(body: Any) -> int | None:
    """The window of one LM Studio `/api/v0/models/{model}` entry: loaded, else the model's largest."""
    if not isinstance(body, dict):
        return None
    return _positive(body.get("loaded_context_length")) or _positive(body.get("max_context_length"))


def ollama_window(body: Any) -> int | None:
    """The window Ollama serves a model with, from its `/api/show` answer (see the module's docstring)."""
    if not isinstance(body, dict) or not isinstance(body.get("model_info"), dict):
        return None
    info = body["model_info"]
    trained = next(
        (_positive(value) for key, value in info.items() if isinstance(key, str) and key.endswith(".context_length")),
        None,
    )
    configured = _num_ctx(body.get("parameters"))
    window = configured or OLLAMA_DEFAULT_CONTEXT
    return window if trained is None else min(window, trained)


def _num_ctx(parameters: Any) -> int | None:
    """`num_ctx` of Ollama's `parameters` text (one `name value` a line)."""
    for line in parameters.splitlines() if isinstance(parameters, str) else []:
        name, _, value = line.strip().partition(" ")
        if name == "num_ctx":
            return _positive(value.strip())
    return None


def _positive(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    return value if isinstance(value, int) and value > 0 else None
