"""`stepwise serve` in a child process, as a user starts it, on a free port."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx

from stepwise.local.port_owner import listens_on
from tests.support.ports import free_port

# A port picked free can be taken by a parallel test's server first: serve is started this many times at most.
START_ATTEMPTS = 3
START_LIMIT_SECONDS = 120.0
_PROBE_HEADERS = {"x-api-key": "probe"}


class ServeProcess:
    """`stepwise serve` in a child process; `url` once it answers."""

    def __init__(self, arguments: list[str]) -> None:
        # A port picked free can be taken by a parallel test before serve binds it: serve then exits saying
        # so, and starts again on another port.
        for _ in range(START_ATTEMPTS):
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            command = [sys.executable, "-m", "stepwise.cli", "serve", "--port", str(self.port), *arguments]
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if self._wait_until_it_answers():
                return
        raise AssertionError(f"stepwise serve found no free port in {START_ATTEMPTS} attempts")

    def _wait_until_it_answers(self) -> bool:
        """True once serve answers on its port; False when the port was taken before serve could bind it."""
        deadline = time.monotonic() + START_LIMIT_SECONDS
        # one client for every probe: a new one reads the CA certificates again (tens of ms of CPU each)
        with httpx.Client(headers=_PROBE_HEADERS, timeout=2) as probe:
            while True:
                if self.process.poll() is not None:
                    errors = self.process.communicate()[1].decode(errors="replace")
                    assert "Address already in use" in errors, errors[-2000:]
                    return False
                # Probe only serve's own socket: until it listens, the port may belong to another test's server.
                if listens_on(self.process.pid, self.port) is not False:
                    try:
                        # serve's own answer: another of its servers on that port would answer otherwise
                        if probe.get(f"{self.url}/v1/models").status_code == 200:
                            return True
                    except httpx.TransportError:
                        pass
                assert time.monotonic() < deadline, "stepwise serve did not answer in time"
                time.sleep(0.1)

    def end(self, signal_number: int) -> int:
        """Send `signal_number` and wait for the process to exit; its exit code."""
        self.process.send_signal(signal_number)
        self.process.communicate(timeout=60)
        return self.process.returncode
