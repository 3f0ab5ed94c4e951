"""Which store a `stepwise` command uses: `--dynamodb-endpoint`, `--table-name`, `--data-dir`,
`--store-idle-timeout`."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from stepwise.errors import UsageError
from stepwise.local.defaults import DEFAULT_DATA_DIR, DEFAULT_TABLE_NAME
from stepwise.local.dynamodb_local import DynamoDBLocal
from stepwise.local.shared_store import DEFAULT_IDLE_TIMEOUT_SECONDS, StoreLease, attach

DATA_DIR_VARIABLE = "STEPWISE_DATA_DIR"
IDLE_TIMEOUT_VARIABLE = "STEPWISE_STORE_IDLE_TIMEOUT"
# DynamoDB's rule for table names (CreateTable's TableName)
_TABLE_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}")


def table_name(text: str) -> str:
    """`--table-name`: a name DynamoDB accepts, checked before any store starts (argparse says why in one line)."""
    if not _TABLE_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a DynamoDB table name: 3 to 255 of the letters a-z and A-Z, digits, '_', '-' and '.'"
        )
    return text


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    """The store options every command that runs the agent takes."""
    parser.add_argument(
        "--dynamodb-endpoint",
        default=None,
        help="DynamoDB endpoint URL to use instead of the embedded DynamoDB Local (e.g. http://127.0.0.1:8000)",
    )
    parser.add_argument(
        "--table-name",
        type=table_name,
        default=DEFAULT_TABLE_NAME,
        help=f"the conversation table, created if missing (default {DEFAULT_TABLE_NAME})",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get(DATA_DIR_VARIABLE) or DEFAULT_DATA_DIR),
        help=f"where the embedded DynamoDB Local keeps its data (default ${DATA_DIR_VARIABLE} or {DEFAULT_DATA_DIR})",
    )
    add_idle_timeout_argument(parser)


def idle_timeout(text: str) -> float:
    """`--store-idle-timeout`: seconds, 0 or more (0 stops the engine as soon as the last command ends)."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds, 0 or more")
    return seconds


def add_idle_timeout_argument(parser: argparse.ArgumentParser) -> None:
    """`--store-idle-timeout`: how long the embedded store outlives the last command that used it."""
    parser.add_argument(
        "--store-idle-timeout",
        type=idle_timeout,
        default=os.environ.get(IDLE_TIMEOUT_VARIABLE) or f"{DEFAULT_IDLE_TIMEOUT_SECONDS:g}",
        metavar="SECONDS",
        help="how long the embedded DynamoDB Local keeps running after the last command using it ends "
        f"(default ${IDLE_TIMEOUT_VARIABLE} or {DEFAULT_IDLE_TIMEOUT_SECONDS:g}; `stepwise store stop` stops it now)",
    )


@contextmanager
def store_endpoint(args: argparse.Namespace, *, shared: bool = True) -> Iterator[str]:
    """The DynamoDB endpoint of a command: the one given, or DynamoDB Local on `--data-dir` — the engine
    shared by every command on that folder, or with `shared=False` one of the command's own, stopped with it."""
    if args.dynamodb_endpoint:
        yield args.dynamodb_endpoint
        return
    ensure_data_dir(args.data_dir)
    if not shared:
        with DynamoDBLocal(args.data_dir) as engine:
            yield engine.endpoint_url
        return
    with store_lease(args) as lease:
        yield lease.endpoint_url


@contextmanager
def store_lease(args: argparse.Namespace, *, hold_gate: bool = False) -> Iterator[StoreLease]:
    """The command's use of the engine shared on `--data-dir`, for as long as the block runs (see
    `shared_store.attach` for `hold_gate`)."""
    ensure_data_dir(args.data_dir)
    lease = attach(args.data_dir, args.store_idle_timeout, hold_gate=hold_gate)
    try:
        yield lease
    finally:
        lease.release()


@dataclass(frozen=True)
class GivenStore:
    """A store the command was given (`--dynamodb-endpoint`): whoever else uses it, this command cannot tell."""

    endpoint_url: str
    others: int = 0

    def open_gate(self) -> None:
        """Nothing to open: a given store has no gate."""


@contextmanager
def serve_store(args: argparse.Namespace) -> Iterator[StoreLease | GivenStore]:
    """The store of `stepwise serve`: on the shared engine, no other command attaches until `open_gate`, so
    the runs it finds open while `others` is 0 are no other command's (and it may resume them)."""
    if args.dynamodb_endpoint:
        yield GivenStore(args.dynamodb_endpoint)
        return
    with store_lease(args, hold_gate=True) as lease:
        yield lease


def ensure_data_dir(path: Path) -> None:
    """Create `--data-dir` if missing; `UsageError` naming the option when it cannot be the store's folder."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"--data-dir {path}: not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--data-dir {path}: cannot create the folder: {exc.strerror or exc}") from None
