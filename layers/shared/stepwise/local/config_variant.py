"""A configuration file with one profile changed (its model, its system prompt), for `stepwise replay --model`
and `--system-prompt-file`.

The handlers read their configuration from a file, as on AWS, so the variant is written as a file: beside
the original (relative paths in it, such as a scripted model's `script:` or an OpenAPI document, keep
resolving), under a hidden name, and removed when the command ends.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from stepwise.errors import ConfigError, UsageError


@contextmanager
def profile_variant(
    path: Path, profile: str | None, *, model: str | None, system_prompt_file: Path | None
) -> Iterator[Path]:
    """`path` itself when nothing changes; else a copy whose profile `profile` uses `model` and the prompt in
    `system_prompt_file`. Without `profile`, every profile is changed: the copy serves one replay, whose
    profile (the original's) is one of them. `UsageError` naming the option for what cannot be."""
    if model is None and system_prompt_file is None:
        yield path
        return
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    profiles = document.get("profiles") if isinstance(document, dict) else None
    if not isinstance(profiles, dict):
        raise UsageError(f"--model and --system-prompt-file need a Stepwise configuration with profiles:, not {path}")
    if profile is not None and profile not in profiles:
        raise UsageError(f"--profile: no profile {profile!r} in {path}")
    if model is not None and model not in (document.get("models") or {}):
        raise UsageError(f"--model: no model {model!r} in {path}")
    changes: dict[str, str] = {} if model is None else {"model": model}
    if system_prompt_file is not None:
        try:
            changes["system_prompt"] = system_prompt_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--system-prompt-file {system_prompt_file}: cannot read: {exc}") from None
    document["profiles"] = {
        name: {**settings, **changes} if profile in (None, name) and isinstance(settings, dict) else settings
        for name, settings in profiles.items()
    }
    variant = path.with_name(f".{path.stem}-replay-{uuid.uuid4().hex[:8]}{path.suffix or '.yaml'}")
    variant.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    try:
        yield variant
    finally:
        variant.unlink(missing_ok=True)
