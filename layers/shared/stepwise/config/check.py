"""``stepwise config check <file>``: validate a configuration and print the tools each profile offers.

The file may be a Stepwise configuration or a Higress ``ai-agent`` plugin configuration (read through
`stepwise.config.higress`). The check does what a Lambda container does at cold start — validates the file,
imports the OpenAPI documents, asks the MCP servers for their tools, reads the A2A agents' cards, loads the
Python tool modules — and then prints, per profile, each tool as the model will see it: name, description and
JSON schema, and each profile whose model cannot work on this machine (`stepwise.config.model_reach`), and
each profile's governance: its tool policy, guardrails and what it does at its budget
(`stepwise.config.governance_summary`). Before building anything it refuses a tool URL every call to which the
SSRF guard would refuse (a non-public address on a source not marked internal,
`stepwise.config.internal_targets`). Secrets are not fetched: they are resolved at call time only. A bad file
exits with status 1 and the `ConfigError` message, which names the file, the field and the reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from stepwise.config.agents import agent_tool_description
from stepwise.config.context import ContextLimits
from stepwise.config.credentials import SecretResolver
from stepwise.config.governance_summary import (
    ProfileGovernance,
    bedrock_grant_notes,
    governance_warnings,
    profile_governance,
)
from stepwise.config.internal_targets import unmarked_internal_urls
from stepwise.config.loading import read_config_file
from stepwise.config.model import ToolSearch
from stepwise.config.redaction import redact_known_secrets
from stepwise.config.tool_policy import check_policy
from stepwise.errors import ConfigError
from stepwise.models.messages import FIND_TOOLS, ToolSpec
from stepwise.tools.registry import build_tool_registry


@dataclass(frozen=True)
class ProfileTools:
    """One profile's model and the tools it offers, as the model sees them."""

    model: str
    tools: list[ToolSpec]
    search: ToolSearch | None = None
    context: ContextLimits | None = None
    governance: ProfileGovernance = field(default_factory=ProfileGovernance)
    # the profiles it may delegate to, each offered as a tool: (name, the description the model reads)
    agents: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class ConfigReport:
    """What a valid configuration file offers."""

    path: Path
    kind: str
    default_profile: str
    profiles: dict[str, ProfileTools]
    notes: list[str] = field(default_factory=list)
    # what deserves a look but does not make the file unusable (a tool the profile's policy never permits)
    warnings: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {
            "file": str(self.path),
            "kind": self.kind,
            "default_profile": self.default_profile,
            "notes": self.notes,
            "warnings": self.warnings,
            "profiles": {
                name: {
                    "model": profile.model,
                    "tools": [spec.model_dump() for spec in profile.tools],
                    "find_tools": profile.search.model_dump() if profile.search is not None else None,
                    "context_window": profile.context.window if profile.context is not None else None,
                    "compact_at": profile.context.compact_at if profile.context is not None else None,
                    **profile.governance.as_json(),
                    "agents": [{"name": agent, "description": text} for agent, text in profile.agents],
                }
                for name, profile in self.profiles.items()
            },
        }


def add_config_command(subparsers: Any) -> None:
    """Register ``config check`` on the CLI's subparsers."""
    config = subparsers.add_parser("config", help="work with configuration files")
    actions = config.add_subparsers(dest="config_command", required=True)
    check = actions.add_parser(
        "check",
        help="validate a configuration (Stepwise or Higress ai-agent; an ai-intent file is placed) and print the tools",
    )
    check.add_argument("file", help="the configuration file, YAML or JSON")
    check.add_argument("--json", action="store_true", help="print the result as JSON")
    check.add_argument(
        "--aws",
        action="store_true",
        help="also ask Bedrock, as you, whether each Bedrock model exists, is ACTIVE and can be invoked",
    )
    deployed = check.add_argument_group(
        "the deployment (implies --aws)",
        "check what a stack deploys: its BedrockModelId in its Region, its LLMCall role's grants, the account's "
        "Lambda concurrency (docs/deployment.md)",
    )
    deployed.add_argument("--stack", metavar="NAME", help="the CloudFormation stack to check (sam deploy's stack_name)")
    deployed.add_argument("--region", help="the Region to check in (default: the stack's, else yours)")
    deployed.add_argument("--model-id", help="the Bedrock model id the deployment calls (default: the stack's)")
    deployed.add_argument(
        "--expected-runs", type=_count, default=10, metavar="N", help="runs in flight at once (default 10)"
    )
    deployed.add_argument(
        "--waiting-requests",
        type=_count,
        default=0,
        metavar="N",
        help="chat completions waiting on their runs at once (default 0)",
    )
    check.set_defaults(handler=command_config_check)


def _count(text: str) -> int:
    """A whole number from 0 up, for argparse (one line naming the mistake)."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 0 up")
    return int(text)


def command_config_check(args: argparse.Namespace, out: TextIO) -> int:
    """Check ``args.file``; 0 and the tools on ``out`` when valid, 1 and the error on stderr otherwise."""
    try:
        report = check_config_file(Path(args.file))
    except ConfigError as exc:
        print(f"stepwise config check: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        # A value no validation foresaw: still one line for the person at the terminal, never a traceback.
        reason = redact_known_secrets(f"{type(exc).__name__}: {exc}")
        print(f"stepwise config check: {args.file}: cannot be used: {reason}", file=sys.stderr)
        return 1
    # deferred: what this machine can reach is the command's business, not the configuration's
    from stepwise.config.model_reach import profile_problems

    cannot_work = profile_problems(read_config_file(Path(args.file)).config)
    if args.json:
        print(json.dumps(report.as_json() | {"cannot_work": cannot_work}, indent=2, ensure_ascii=False), file=out)
    else:
        print_report(report, out)
        for profile, problem in cannot_work.items():
            print(f"\nprofile {profile} cannot work here: {problem}", file=out)
    if any(getattr(args, name, None) for name in ("stack", "region", "model_id")):
        return _check_deployment(Path(args.file), args, out)
    return _check_aws(Path(args.file), out) if getattr(args, "aws", False) else 0


def _check_deployment(path: Path, args: argparse.Namespace, out: TextIO) -> int:
    """Check what a stack deploys (`stepwise.config.stack_check`): one line per problem or warning with its
    fix; 1 if a problem, 2 (one line) when no Region can be found or the stack cannot be read."""
    import os
    from datetime import UTC, datetime

    from botocore.exceptions import BotoCoreError, ClientError

    from stepwise.config.aws_region import NoRegion
    from stepwise.config.stack_check import check_deployment, session_clients

    try:
        report = check_deployment(
            path,
            session_clients(),
            today=datetime.now(UTC).date(),
            environ=os.environ,
            stack_name=args.stack,
            region=args.region,
            model_id=args.model_id,
            runs=args.expected_runs,
            waiting=args.waiting_requests,
        )
    except NoRegion as exc:
        print(f"stepwise config check --aws: {exc}", file=sys.stderr)
        return 2
    except (ClientError, BotoCoreError) as exc:
        print(f"stepwise config check --aws: {deployment_unreadable(exc, args.stack, args.region)}", file=sys.stderr)
        return 2
    where = f"stack {args.stack}, " if args.stack else ""
    model = report.model_id or "of the configuration"
    print(f"aws: checking {where}{report.region}, model {model}", file=out)
    for problem in report.bedrock:
        print(f"aws: {problem.line()}", file=out)
    for finding in report.findings:
        print(f"{'aws' if finding.level == 'problem' else 'warning'}: {finding.line()}", file=out)
    if not report.failed:
        print("aws: the deployment's models can be invoked", file=out)
    return 1 if report.failed else 0


def deployment_unreadable(exc: Exception, stack: str | None, region: str | None) -> str:
    """One line on why the deployment could not be read, with what to do: botocore's own wording names neither
    the fix nor, for a missing stack, the Region it looked in."""
    from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

    from stepwise.config.aws_region import WAYS_TO_GIVE_CREDENTIALS

    where = f"in {region}" if region else "in your Region"
    if isinstance(exc, NoCredentialsError):
        return f"no AWS credentials were found; configure them ({WAYS_TO_GIVE_CREDENTIALS}) and check again"
    if isinstance(exc, EndpointConnectionError):
        return f"{exc}; check this machine's network (or proxy) and that the Region is right"
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        if code == "ValidationError" and stack and "does not exist" in str(exc):
            return f"no stack named {stack} {where}: check --stack (sam deploy's stack_name) and --region"
        if code in {"ExpiredToken", "ExpiredTokenException", "RequestExpired"}:
            return f"{exc}; the session's credentials have expired: sign in again (`aws sso login`) and check again"
    return str(exc)


def _check_aws(path: Path, out: TextIO) -> int:
    """Ask Bedrock about each configured Bedrock model: one line per problem with its fix; 1 if any, 2 (one
    line, nothing asked) when a model has no Region to ask in."""
    import os
    from datetime import UTC, datetime

    from stepwise.config.aws_region import NoRegion
    from stepwise.config.bedrock_check import caller_bedrock_client, check_bedrock_models

    config = read_config_file(path).config
    try:
        problems = check_bedrock_models(
            config, caller_bedrock_client, today=datetime.now(UTC).date(), environ=os.environ
        )
    except NoRegion as exc:
        print(f"stepwise config check --aws: {exc}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"aws: {problem.line()}", file=out)
    if not problems:
        print("aws: every Bedrock model of the configuration can be invoked", file=out)
    return 1 if problems else 0


def check_config_file(path: Path, *, environ: Mapping[str, str] | None = None, s3_client: Any = None) -> ConfigReport:
    """Validate the file and build its tools as a container would; `ConfigError` at the first problem."""
    loaded = read_config_file(path, environ=environ)
    config, kind, notes = loaded.config, loaded.kind, loaded.notes
    refused = unmarked_internal_urls(config.tools)
    if refused:
        raise ConfigError(f"{path}: {'; '.join(refused)}")
    registry = build_tool_registry(
        config.tools, config_dir=path.resolve().parent, secret_resolver=SecretResolver(), s3_client=s3_client
    )
    registry.close()
    profiles: dict[str, ProfileTools] = {}
    warnings: list[str] = []
    for name, profile in config.profiles.items():
        try:
            specs = registry.specs(profile.tools)
        except ConfigError as exc:
            raise ConfigError(f"{path}: profiles.{name}.tools: {exc}") from None
        searched = profile.tool_search.needed(len(specs))
        if any(spec.name == FIND_TOOLS for spec in specs):
            if searched:
                raise ConfigError(
                    f"{path}: profiles.{name}.tools: a tool is named {FIND_TOOLS}, the name of the tool search a "
                    f"profile with more than tool_search.threshold={profile.tool_search.threshold} tools needs; "
                    "rename it"
                )
            if registry.full_specs(profile.tools):
                raise ConfigError(
                    f"{path}: profiles.{name}.tools: a tool is named {FIND_TOOLS}, the name of the tool that offers "
                    "the full schemas of the profile's tools offered reduced; rename it"
                )
        search = profile.tool_search if searched else None
        try:
            warnings += check_policy(name, profile, registry.specs(profile.tools, full=True), path.resolve().parent)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
        warnings += governance_warnings(name, profile)
        profiles[name] = ProfileTools(
            model=profile.model,
            tools=specs,
            search=search,
            context=config.context_limits(name),
            governance=profile_governance(profile),
            agents=[
                (ref.profile, agent_tool_description(ref, config.profiles[ref.profile].description))
                for ref in profile.agent_refs
            ],
        )
    # What the tool sources left out or renamed (OpenAPI operations that cannot be offered, name clashes), and
    # the grant a Bedrock guardrail needs on AWS.
    notes = notes + registry.notes + bedrock_grant_notes({name: p.governance for name, p in profiles.items()})
    return ConfigReport(path, kind, config.default_profile, profiles, notes, warnings)


def print_report(report: ConfigReport, out: TextIO) -> None:
    """The report for a person: per profile, each tool's name, description and schema."""
    what = "a Higress ai-agent configuration, read as" if report.kind == "higress-ai-agent" else "a valid"
    print(f"{report.path}: {what} Stepwise configuration", file=out)
    for note in report.notes:
        print(f"note: {note}", file=out)
    for warning in report.warnings:
        print(f"warning: {warning}", file=out)
    for name, profile in report.profiles.items():
        default = ", the default" if name == report.default_profile else ""
        count = f"{len(profile.tools)} tool{'' if len(profile.tools) == 1 else 's'}"
        print(f"\nprofile {name} (model {profile.model}{default}): {count}", file=out)
        if profile.search is not None:
            print(
                f"  more than tool_search.threshold={profile.search.threshold}: the model is offered {FIND_TOOLS} "
                f"({profile.search.results} tools per search) and the tools it finds, not all {len(profile.tools)}",
                file=out,
            )
        if profile.context is not None:
            print(f"  {_context_line(profile.model, profile.context)}", file=out)
        for line in profile.governance.lines():
            print(f"  {line}", file=out)
        for agent, description in profile.agents:
            print(f"  delegates to {agent} (a tool taking a question): {description}", file=out)
        for spec in profile.tools:
            print(f"\n  {spec.name}", file=out)
            for line in (spec.description or "(no description)").splitlines():
                print(f"    {line}", file=out)
            schema = json.dumps(spec.parameters, indent=2, ensure_ascii=False)
            print("    parameters: " + schema.replace("\n", "\n    "), file=out)


def _context_line(model: str, limits: ContextLimits) -> str:
    """What the profile's runs do with the model's window."""
    if limits.window is None:
        return (
            f"context window: not known, so requests are sent whole (set models.{model}.context_window, or the "
            "profile's context.window_tokens) until a run learns it from the model's server: its model listing "
            "(vLLM, LM Studio, Ollama) or a refusal that states it"
        )
    if not limits.compaction or limits.compact_at is None:
        return f"context window: {limits.window} tokens; requests are fitted to it, never summarized"
    return f"context window: {limits.window} tokens; earlier iterations are summarized past {limits.compact_at}"
