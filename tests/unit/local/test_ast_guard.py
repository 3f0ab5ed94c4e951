"""Parsing on several threads at once on CPython 3.11: the guard `stepwise serve` installs keeps it correct."""

from __future__ import annotations

import ast
import sys
import threading
import traceback
from pathlib import Path

from stepwise.local.ast_guard import serialise_ast_parsing

SOURCE = Path(ast.__file__).read_text(encoding="utf-8")
PARSES = 12


class Finalized:
    """Garbage in a reference cycle whose finalizer runs Python code, so a collection may pass the GIL on."""

    def __init__(self) -> None:
        self.cycle = self

    def __del__(self) -> None:
        sum(range(20))


def format_tracebacks(stop: threading.Event) -> None:
    """What a busy server's threads do: log failures, each traceback parsing its failing line."""
    empty: dict[str, dict[str, str]] = {}
    while not stop.is_set():
        try:
            # the failing line is what the traceback parses
            empty["missing"]["key"]
        except KeyError:
            traceback.format_exc()


def test_parses_beside_threads_formatting_tracebacks_never_fail() -> None:
    # Given the guard installed, and two threads formatting tracebacks, switching threads often
    serialise_ast_parsing()
    stop = threading.Event()
    others = [threading.Thread(target=format_tracebacks, args=(stop,), daemon=True) for _ in range(2)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0001)
    failures: list[str] = []
    try:
        for other in others:
            other.start()
        # When a large module is parsed repeatedly while collections run finalizers mid-parse
        for _ in range(PARSES):
            for _ in range(300):
                Finalized()
            try:
                ast.parse(SOURCE)
            except SystemError as error:
                failures.append(str(error))
    finally:
        sys.setswitchinterval(interval)
        stop.set()
        for other in others:
            other.join()
    # Then every parse succeeded
    assert failures == []


def test_the_guard_is_installed_once() -> None:
    # Given the guard installed
    serialise_ast_parsing()
    # When it is installed again, then nothing is wrapped twice
    assert serialise_ast_parsing() is False
