"""SIGINT (Ctrl-C) and SIGTERM for a command that runs the agent in the foreground (`stepwise run`, `demo`).

Both mean the same: stop, but not in the middle of a step. The first one sets `requested`, which the local
engine reads before each state: the step in flight (a tool call that may change something included)
finishes and records its outcome, then the execution ends ABORTED, and the run is recorded CANCELLED as a
stopped execution is. One line on stderr says so. A second signal ends the process at once (the default
handlers are back), for a step that would take too long.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TextIO

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# How a shell reports a process that a signal ended: 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
SIGNAL_EXIT_BASE = 128


class StopRequest:
    """Whether, and by which signal, the command was asked to stop."""

    def __init__(self, command: str, err: TextIO | None = None) -> None:
        self.requested = threading.Event()
        self.signal_number: int | None = None
        self._command = command
        self._err = err

    def handle(self, signal_number: int, _: FrameType | None) -> None:
        """The signal handler: the first signal asks to stop; the defaults are put back for a second."""
        for each in _SIGNALS:
            signal.signal(each, signal.SIG_DFL)
        self.signal_number = signal_number
        self.requested.set()
        name = signal.Signals(signal_number).name
        print(
            f"{self._command}: {name}: stopping once the step in flight finishes (send {name} again to stop at once)",
            file=self._err or sys.stderr,  # stderr as it is then (a test may have replaced it)
            flush=True,
        )

    def exit_code(self, code: int) -> int:
        """`code`, or the shell's code for the signal that stopped the command."""
        return code if self.signal_number is None else SIGNAL_EXIT_BASE + self.signal_number


@contextmanager
def stop_on_signals(command: str, err: TextIO | None = None) -> Iterator[StopRequest]:
    """SIGINT and SIGTERM ask the command to stop for as long as the block runs (saying so on `err`,
    stderr by default); the handlers found are put back after it."""
    request = StopRequest(command, err)
    previous = {each: signal.signal(each, request.handle) for each in _SIGNALS}
    try:
        yield request
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)
