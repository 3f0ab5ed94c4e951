"""The change `stepwise replay --model` and `--system-prompt-file` make: the replayed profile alone, in memory
(`stepwise.config.profile_variant`), checked before anything runs, each problem naming its option."""

from __future__ import annotations

from pathlib import Path

from stepwise.config.model import StepwiseConfig
from stepwise.config.profile_variant import ProfileVariant
from stepwise.errors import ConfigError, UsageError


def replay_variant(
    config: StepwiseConfig, path: Path, profile: str, *, model: str | None, system_prompt_file: Path | None
) -> tuple[StepwiseConfig, ProfileVariant | None]:
    """The configuration the replay runs under, and the variant that makes it (None when nothing changes):
    `profile` with `model` and the prompt in `system_prompt_file`. `UsageError` naming the option when the
    change cannot be made."""
    if model is None and system_prompt_file is None:
        return config, None
    if model is not None and model not in config.models:
        raise UsageError(f"--model: no model {model!r} in {path}; its models are {', '.join(config.models)}")
    prompt = None
    if system_prompt_file is not None:
        try:
            prompt = system_prompt_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--system-prompt-file {system_prompt_file}: cannot read: {exc}") from None
    variant = ProfileVariant(profile=profile, model=model, system_prompt=prompt)
    try:
        return variant.applied_to(config), variant
    except ConfigError as exc:
        option = f"--model {model}" if model is not None else f"--system-prompt-file {system_prompt_file}"
        raise UsageError(f"{option}: profile '{profile}' cannot take it: {exc}") from None
