"""`stepwise store start|status|stop`: the DynamoDB Local that commands on a data folder share."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, TextIO

from stepwise.local.defaults import DEFAULT_DATA_DIR
from stepwise.local.store_options import DATA_DIR_VARIABLE, add_idle_timeout_argument, store_lease


def _describe(endpoint_url: str, pid: int, data_dir: Path) -> str:
    return f"{endpoint_url} · engine pid {pid} · data {data_dir.resolve()}"


def command_start(args: argparse.Namespace, out: TextIO) -> int:
    """Start the folder's engine (or find it running) and leave it for the commands that follow."""
    with store_lease(args) as lease:
        said = "already running" if lease.reused else "started"
        print(f"DynamoDB Local {said}: {_describe(lease.endpoint_url, lease.record.pid, args.data_dir)}", file=out)
        print(f"  stops after {args.store_idle_timeout:g} s unused · `stepwise store stop` stops it now", file=out)
    return 0


def command_status(args: argparse.Namespace, out: TextIO) -> int:
    """Say whether the folder's engine runs, who uses it and for how long it has been unused; 0 if it runs."""
    from stepwise.local.shared_store import status

    found = status(args.data_dir)
    if found.record is None:
        print(f"DynamoDB Local is not running for {args.data_dir.resolve()}", file=out)
        return 1
    print(f"DynamoDB Local running: {_describe(found.record.endpoint_url, found.record.pid, args.data_dir)}", file=out)
    if found.commands is None:
        print("  a command is attaching to it now", file=out)
    elif found.commands:
        print(f"  in use by {found.commands} command(s)", file=out)
    elif found.idle_seconds is not None:
        print(f"  unused for {found.idle_seconds:.0f} s", file=out)
    return 0


def command_stop(args: argparse.Namespace, out: TextIO) -> int:
    """Stop the folder's engine now, or once the commands using it end."""
    from stepwise.local.shared_store import stop

    if not args.data_dir.is_dir():
        print(f"DynamoDB Local is not running for {args.data_dir}", file=out)
        return 0
    record, commands = stop(args.data_dir)
    if record is None:
        print(f"DynamoDB Local is not running for {args.data_dir.resolve()}", file=out)
    elif commands:
        print(f"DynamoDB Local is in use by {commands} command(s): it stops as soon as they end", file=out)
    else:
        print(
            f"DynamoDB Local stopped (engine pid {record.pid}); its data stays in {args.data_dir.resolve()}", file=out
        )
    return 0


def add_store_command(subparsers: Any) -> None:
    """Register `stepwise store` on the CLI's subcommands."""
    store = subparsers.add_parser("store", help="start, inspect or stop the embedded DynamoDB Local commands share")
    actions = store.add_subparsers(dest="store_action", required=True)
    handlers = {
        "start": (command_start, "start it (or find it running) and leave it for the commands that follow"),
        "status": (command_status, "say whether it runs, its endpoint, and how long it has been unused"),
        "stop": (command_stop, "stop it now, or as soon as the commands using it end"),
    }
    for name, (handler, text) in handlers.items():
        action = actions.add_parser(name, help=text)
        action.add_argument(
            "--data-dir",
            type=Path,
            default=Path(os.environ.get(DATA_DIR_VARIABLE) or DEFAULT_DATA_DIR),
            help=f"the store's data folder (default ${DATA_DIR_VARIABLE} or {DEFAULT_DATA_DIR})",
        )
        if name == "start":
            add_idle_timeout_argument(action)
        action.set_defaults(handler=handler)
