"""A server's own word on a model's context window, read from what it lists about the model.

Asked only for a model whose window neither the configuration nor the catalog knows (`stepwise.steps.
learned_window`), in this order, each a documented endpoint of one server, until one answers:

- `GET {base_url}/models`, the model's entry: vLLM's and SGLang's `max_model_len` (the window served,
  `--max-model-len`, not the model's trained one); a hosted gateway's own field (OpenRouter's and Together's
  `context_length`, Groq's `context_window`, Mistral's `max_context_length`); llama.cpp's `meta.n_ctx` where
  a build lists it (never `meta.n_ctx_train`, the trained size, which the server may not serve);
- llama.cpp's server: `GET {origin}/props?model=...`, `default_generation_settings.n_ctx` (a slot's window,
  what one request must fit; the `model` parameter routes it in router mode);
- Hugging Face TGI: `GET {origin}/info`, `max_total_tokens` (prompt and reply together);
- LM Studio: `GET {origin}/api/v0/models/{model}`, `loaded_context_length` (what the loaded model was given)
  else `max_context_length`;
- Ollama (0.10 and later): `GET {origin}/api/ps`, the `context_length` the model is loaded with, when it is;
- Ollama: `POST {origin}/api/show`: the `num_ctx` its parameters set, else 4,096 tokens, never more than the
  model's trained `<architecture>.context_length` (`model_info`). 4,096 is Ollama's default up to 0.15 and
  its smallest since (0.16 chooses 4k, 32k or 256k by the GPU's memory, and `OLLAMA_CONTEXT_LENGTH` may
  set more): a window read too small only compacts sooner.

What `/v1/models` answered orders the rest: llama.cpp's listing (`owned_by: llamacpp`, a `meta` object) is
followed by `/props` only; LM Studio's (`owned_by: organization_owner`), Ollama's (`library`) and TGI's (the
model id) by that server's endpoints first. A vLLM or SGLang server answers in one request, llama.cpp's in
two, LM Studio's, TGI's and a loaded Ollama model's in two or three.
`origin` is `base_url` without its `/v1`. Nothing here raises: a server that answers none of these (or
slowly, or with anything unreadable) gives None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from stepwise.inputs.json_limits import load_json

# Ollama's context window when neither the model nor the server is told otherwise (its FAQ; the smallest of
# its VRAM-based defaults since 0.16).
OLLAMA_DEFAULT_CONTEXT = 4096
# A listing is a small local answer; a server that takes longer is treated as having none.
LISTING_TIMEOUT_SECONDS = 3.0

_Ask = tuple[str, str, dict[str, Any] | None, Callable[[Any], int | None]]


def listed_window(client: httpx.Client, base_url: str, model: str, headers: dict[str, str]) -> int | None:
    """The window the server at `base_url` lists for `model`, or None when it lists none."""
    origin = base_url.removesuffix("/").removesuffix("/v1")
    listing = _ask(client, "GET", f"{base_url}/models", None, headers)
    window = vllm_window(listing, model)
    if window is not None:
        return window
    asks: dict[str, tuple[_Ask, ...]] = {
        "llama.cpp": (("GET", f"{origin}/props", {"model": model}, llama_cpp_window),),
        "tgi": (("GET", f"{origin}/info", None, tgi_window),),
        "lm-studio": (("GET", f"{origin}/api/v0/models/{model}", None, lm_studio_window),),
        "ollama": (
            ("GET", f"{origin}/api/ps", None, lambda body: ollama_loaded_window(body, model)),
            ("POST", f"{origin}/api/show", {"model": model}, ollama_window),
        ),
    }
    for kind in _kinds_to_ask(listing):
        for method, url, question, read in asks[kind]:
            window = read(_ask(client, method, url, question, headers))
            if window is not None:
                return window
    return None


def _kinds_to_ask(listing: Any) -> tuple[str, ...]:
    """Which servers' own endpoints to ask, in order: only llama.cpp's for llama.cpp's listing (its entries are
    `owned_by: llamacpp`, with a `meta` object); else the server the listing's `owned_by` names first (LM
    Studio's `organization_owner`, Ollama's `library` namespace, TGI's model id), then the others."""
    entries = listing.get("data") if isinstance(listing, dict) else None
    entries = [entry for entry in (entries if isinstance(entries, list) else []) if isinstance(entry, dict)]
    if any(entry.get("owned_by") == "llamacpp" or isinstance(entry.get("meta"), dict) for entry in entries):
        return ("llama.cpp",)
    owners = {entry.get("owned_by") for entry in entries}
    hints = (
        ("lm-studio", "organization_owner" in owners),
        ("ollama", "library" in owners),
        ("tgi", any(entry.get("owned_by") == entry.get("id") for entry in entries)),
    )
    first = next((kind for kind, hinted in hints if hinted), "llama.cpp")
    return (first, *(kind for kind in ("llama.cpp", "tgi", "lm-studio", "ollama") if kind != first))


def _ask(client: httpx.Client, method: str, url: str, question: dict[str, Any] | None, headers: dict[str, str]) -> Any:
    """The JSON a server answers `method url` with (a GET's `question` as its query, a POST's as its body), or
    None when it answers with an error, slowly, or not at all."""
    query, body = (question, None) if method == "GET" else (None, question)
    try:
        response = client.request(
            method, url, params=query, json=body, headers=headers, timeout=LISTING_TIMEOUT_SECONDS
        )
        return load_json(response.content, what="a model listing") if response.is_success else None
    except (httpx.HTTPError, ValueError):
        return None


# The window's name in an OpenAI-style listing's entry: vLLM's (and SGLang's), OpenRouter's and Together's,
# Groq's, Mistral's.
_LISTED_WINDOW_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")


def vllm_window(body: Any, model: str) -> int | None:
    """The window of `model`'s entry in an OpenAI-style `{"data": [...]}` listing: vLLM's `max_model_len`, or
    the field a hosted gateway names it by (`_LISTED_WINDOW_FIELDS`), else llama.cpp's `meta.n_ctx`."""
    entries = body.get("data") if isinstance(body, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            listed = next(
                (window for name in _LISTED_WINDOW_FIELDS if (window := _positive(entry.get(name))) is not None),
                None,
            )
            meta = entry.get("meta")
            return listed or (_positive(meta.get("n_ctx")) if isinstance(meta, dict) else None)
    return None


def llama_cpp_window(body: Any) -> int | None:
    """The window of a llama.cpp server's slot, from its `/props` answer (`default_generation_settings.n_ctx`)."""
    settings = body.get("default_generation_settings") if isinstance(body, dict) else None
    return _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None


def tgi_window(body: Any) -> int | None:
    """The window a TGI server serves, from its `/info` answer: `max_total_tokens`, prompt and reply together."""
    return _positive(body.get("max_total_tokens")) if isinstance(body, dict) else None


def ollama_loaded_window(body: Any, model: str) -> int | None:
    """The `context_length` Ollama's `/api/ps` lists for `model` when it is loaded (a name without a tag is
    the `latest` one, as Ollama reads it)."""
    names = {model, f"{model}:latest"}
    entries = body.get("models") if isinstance(body, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and (entry.get("name") in names or entry.get("model") in names):
            return _positive(entry.get("context_length"))
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
