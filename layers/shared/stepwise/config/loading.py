"""Reading a configuration file: Stepwise's own format, or a Higress `ai-agent` configuration as it is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from stepwise.config.model import StepwiseConfig
from stepwise.errors import ConfigError
from stepwise.inputs.json_limits import MAX_JSON_DEPTH, JsonLimitExceeded, check_depth, value_depth
from stepwise.inputs.text_policy import clean_value, locate_unencodable, replacement_note
from stepwise.inputs.yaml_aliases import AliasExpansionExceeded, check_alias_expansion

# A configuration is a few kilobytes; a file far bigger is a mistake (a data file named by accident).
MAX_CONFIG_BYTES = 1024 * 1024


@dataclass
class LoadedConfig:
    """A validated configuration, which format it was written in, and notes on how it was read."""

    config: StepwiseConfig
    kind: Literal["stepwise", "higress-ai-agent"] = "stepwise"
    notes: list[str] = field(default_factory=list)


def read_config_file(path: Path, *, environ: Mapping[str, str] | None = None) -> LoadedConfig:
    """Read and validate a YAML or JSON configuration file; `ConfigError` names the file, field and reason.

    The file is held to `MAX_CONFIG_BYTES`, `MAX_JSON_DEPTH` levels of nesting and YAML aliases that
    expand it to at most `MAX_EXPANDED_VALUES` values, like every other document the service parses.
    Text that cannot be encoded (a `"\\ud800"` escape, say) is replaced by the text policy, and a note
    says where.
    """
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: the file is {size} bytes; the limit is {MAX_CONFIG_BYTES}")
        text = path.read_text(encoding="utf-8")
        raw = yaml.safe_load(text)
        check_alias_expansion(raw, what="the file")
        check_depth(value_depth(raw), what="the file")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except (JsonLimitExceeded, AliasExpansionExceeded) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to read; the limit is {MAX_JSON_DEPTH} levels") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML{at}") from None
    raw, notes = _repaired(raw)
    if isinstance(raw, Mapping) and "models" in raw:
        # a Stepwise file (it names its models): no Higress shape has `models:`, so the Higress converter and
        # its models are loaded only for a file that may be one
        return LoadedConfig(StepwiseConfig.from_mapping(raw, source=str(path), environ=environ), notes=notes)
    from stepwise.config.higress import (
        higress_agent_fragment,
        higress_fragment_explanation,
        higress_intent_placement,
        higress_to_stepwise,
        is_higress_agent_config,
        is_higress_intent_config,
    )

    if is_higress_intent_config(raw):
        raise ConfigError(higress_intent_placement(raw, source=str(path)))
    fragment = higress_agent_fragment(raw)
    if fragment:
        raise ConfigError(higress_fragment_explanation(fragment, source=str(path)))
    if is_higress_agent_config(raw):
        conversion = higress_to_stepwise(raw, source=str(path))
        config = StepwiseConfig.from_mapping(conversion.config, source=str(path), environ=environ)
        return LoadedConfig(config, "higress-ai-agent", [*notes, *conversion.notes])
    return LoadedConfig(StepwiseConfig.from_mapping(raw, source=str(path), environ=environ), notes=notes)


def _repaired(raw: Any) -> tuple[Any, list[str]]:
    problem = locate_unencodable(raw)
    if problem is None:
        return raw, []
    cleaned, replaced = clean_value(raw)
    return cleaned, [f"{problem[0]}: {replacement_note(replaced)}"]
