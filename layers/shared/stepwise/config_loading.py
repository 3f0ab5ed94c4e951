"""Reading a configuration file: Stepwise's own format, or a Higress `ai-agent` configuration as it is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml

from stepwise.errors import ConfigError
from stepwise.higress import higress_to_stepwise, is_higress_agent_config
from stepwise.models.config import StepwiseConfig


@dataclass
class LoadedConfig:
    """A validated configuration, which format it was written in, and notes on how it was read."""

    config: StepwiseConfig
    kind: Literal["stepwise", "higress-ai-agent"] = "stepwise"
    notes: list[str] = field(default_factory=list)


def read_config_file(path: Path, *, environ: Mapping[str, str] | None = None) -> LoadedConfig:
    """Read and validate a YAML or JSON configuration file; `ConfigError` names the file, field and reason."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML{at}") from None
    if is_higress_agent_config(raw):
        conversion = higress_to_stepwise(raw, source=str(path))
        config = StepwiseConfig.from_mapping(conversion.config, source=str(path), environ=environ)
        return LoadedConfig(config, "higress-ai-agent", conversion.notes)
    return LoadedConfig(StepwiseConfig.from_mapping(raw, source=str(path), environ=environ))
