"""`stepwise replay RUN_ID`: run a stored run again under a changed configuration, its tool calls answered
from the recording, and print the new run beside the original."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from stepwise.config.loading import read_config_file
from stepwise.config.model_reach import preflight, require
from stepwise.errors import UsageError
from stepwise.evals.outcome import RunOutcome, outcome_from_store
from stepwise.evals.replay_diff import replay_diff
from stepwise.local.command_stack import add_config_arguments, config_path, local_stack
from stepwise.local.config_variant import replay_variant
from stepwise.local.defaults import PROJECT_ROOT
from stepwise.local.environment import LocalEnvironment
from stepwise.local.store_options import add_store_arguments, store_endpoint
from stepwise.local.whole_numbers import whole_number
from stepwise.models.run import RunMeta
from stepwise.steps.replays import ReplayRefused, prepare_replay

_SHOWN_CHARS = 60


def add_replay_command(subparsers: Any) -> None:
    """Register `stepwise replay` on the CLI's subcommands."""
    replay = subparsers.add_parser(
        "replay", help="run a stored run again under a changed configuration, tool calls answered from the recording"
    )
    replay.add_argument("run_id", help="the stored run to replay")
    add_config_arguments(replay, PROJECT_ROOT / "config" / "stepwise.yaml")
    replay.add_argument("--profile", default=None, help="the profile to replay under (default: the original's)")
    replay.add_argument("--model", default=None, help="the configuration's model the replay's profile uses instead")
    replay.add_argument(
        "--system-prompt-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="the system prompt the replay's profile uses instead, read from FILE",
    )
    replay.add_argument(
        "--from-iteration",
        type=whole_number(0),
        default=0,
        metavar="K",
        help="keep the original's first K iterations as recorded and let the model go on from there",
    )
    replay.add_argument(
        "--live-tools",
        action="store_true",
        help="call a tool for real when the recording has no such call, if it is read-only and needs no approval",
    )
    replay.add_argument("--json", action="store_true", help="print run_id, original_run_id, status, answer and diff")
    add_store_arguments(replay)
    replay.set_defaults(handler=command_replay)


def replay_run(environment: LocalEnvironment, args: argparse.Namespace) -> tuple[RunOutcome, RunOutcome]:
    """Store and execute the replay `args` ask for; the original's and the replay's outcomes."""
    store = environment.runtime.store
    original = store.get_run(args.run_id)
    if original is None:
        raise UsageError(f"no run {args.run_id} in the store (--data-dir, --dynamodb-endpoint, --table-name)")
    try:
        meta = prepare_replay(
            environment.runtime,
            original,
            owner=original.owner,
            profile=args.profile,
            from_iteration=args.from_iteration,
            live_tools=args.live_tools,
            metadata=_changes(args),
        )
    except ReplayRefused as exc:
        option = {"run_id": "run id", "from_iteration": "--from-iteration", "profile": "--profile"}[exc.field]
        raise UsageError(f"{option}: {exc.reason}") from None
    environment.execute(meta.run_id, from_iteration=args.from_iteration)
    replayed = store.require_run(meta.run_id)
    return (
        outcome_from_store(original, store.list_steps(original.run_id)),
        outcome_from_store(replayed, store.list_steps(replayed.run_id)),
    )


def _changes(args: argparse.Namespace) -> dict[str, str]:
    """What the replay changed besides the configuration file, kept in the new run's metadata."""
    changes = {"replay.model": args.model} if args.model else {}
    if args.system_prompt_file is not None:
        changes["replay.system_prompt_file"] = args.system_prompt_file.name[:256]
    return changes


def stored_run(endpoint_url: str, table_name: str, run_id: str) -> RunMeta | None:
    """The stored run `run_id`, read before the environment starts (its profile decides what the replay
    changes and checks); None when the store has no such run."""
    from stepwise.config.settings import Settings
    from stepwise.local.embedded_dynamodb import create_table_from_template
    from stepwise.local.template import SamTemplate
    from stepwise.steps.runtime import dynamodb_client
    from stepwise.store import ConversationStore

    # the local store's own client (placeholder keys, fixed Region), on the table the environment will use
    client = dynamodb_client(Settings(table_name=table_name, dynamodb_endpoint_url=endpoint_url, local_endpoints=True))
    create_table_from_template(client, SamTemplate.load(PROJECT_ROOT / "template.yaml"), table_name)
    return ConversationStore(client, table_name).get_run(run_id)


def command_replay(args: argparse.Namespace, out: TextIO) -> int:
    """Replay the run; exit 0 when the replay succeeded, 1 otherwise (its diff is printed either way)."""
    path = config_path(args)
    config = read_config_file(path).config
    if args.profile is not None and args.profile not in config.profiles:
        raise UsageError(
            f"--profile: no profile {args.profile!r} in {path}; its profiles are {', '.join(config.profiles)}"
        )
    with store_endpoint(args) as endpoint_url:
        original = stored_run(endpoint_url, args.table_name, args.run_id)
        if original is None:
            raise UsageError(f"no run {args.run_id} in the store (--data-dir, --dynamodb-endpoint, --table-name)")
        profile = args.profile or original.profile
        if profile not in config.profiles:
            raise UsageError(
                f"run {args.run_id} ran under profile {profile!r}, which {path} does not have; "
                "choose one with --profile"
            )
        replayed, variant = replay_variant(
            config, path, profile, model=args.model, system_prompt_file=args.system_prompt_file
        )
        require(preflight(replayed, profiles=[profile]), "replay")
        with local_stack(
            args, path, endpoint_url=endpoint_url, extra_environment=variant.environment() if variant else None
        ) as environment:
            original_outcome, replay = replay_run(environment, args)
    diff = replay_diff(original_outcome, replay)
    if args.json:
        document = {
            "run_id": replay.run_id,
            "original_run_id": original_outcome.run_id,
            "status": replay.status,
            "stop_reason": replay.stop_reason,
            "answer": replay.answer,
            "iterations": replay.iterations,
            "from_iteration": args.from_iteration,
            "diff": diff,
        }
        print(json.dumps(document, indent=2, ensure_ascii=False), file=out)
    else:
        print_diff(original_outcome, replay, diff, args.from_iteration, out)
    return 0 if replay.status == "SUCCEEDED" else 1


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def print_diff(original: RunOutcome, replay: RunOutcome, diff: dict[str, Any], kept: int, out: TextIO) -> None:
    """The replay beside its original, field by field, changed fields marked."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out, width=None if out.isatty() else 160, highlight=False)
    kept_text = f"the first {kept} iteration(s) kept as recorded" if kept else "from the question"
    console.print(f"replay {replay.run_id} of run {original.run_id} · {kept_text} · tools answered from the recording")
    table = Table(show_edge=False)
    for column in ("", "original", "replay", "changed"):
        table.add_column(column, overflow="fold")
    for field in ("status", "stop_reason", "answer", "iterations", "input_tokens", "output_tokens", "cost_usd"):
        entry = diff[field]
        table.add_row(field, _shown(entry["original"]), _shown(entry["replay"]), "*" if entry["changed"] else "")
    calls = diff["tool_calls"]
    table.add_row(
        "tool calls",
        "\n".join(f"{call['tool']} {_shown(call['arguments'])}" for call in calls["original"]) or "none",
        "\n".join(f"{call['tool']} {_shown(call['arguments'])}" for call in calls["replay"]) or "none",
        "*" if calls["changed"] else "",
    )
    console.print(table)
    for call in calls["not_recorded"]:
        console.print(f"not recorded (answered so, not called): {call['tool']} {_shown(call['arguments'])}")
    console.print(f"run_id {replay.run_id} · status {replay.status} · stop_reason {replay.stop_reason}")
