"""Running the template's Lambda handlers in worker processes, as Lambda runs them in containers of their own.

`stepwise serve --workers N` gives the engine's Task states `LambdaWorkers` instead of the in-process
invoker: N Python processes, each importing a function's handler once (a warm container) and running
the invocations it is sent on threads of its own. The point is the second core: the handlers' CPU
(botocore's request building, signing and parsing above all) is no longer queued behind one
interpreter's lock with the engine, the HTTP front and the API function.

What crosses the process boundary is what crosses it on AWS: the event and the result as JSON, and a
function error as its name and cause. The store, the model, the tools and the local Step Functions
endpoint (callbacks) are reached over loopback HTTP from the worker as from the server; the worker
inherits the server's environment (the table, the endpoints), which is set before it starts.

A worker that exits with invocations in flight (killed, out of memory) fails each of them with
`Lambda.ServiceException`, as the service reports an invocation it could not complete, so the state's
Retry and Catch apply; the next invocation starts a new worker. Workers ignore SIGINT and SIGTERM: a
Ctrl-C or a signal sent to the whole process group must not end the steps the server is draining. They
exit when the server closes their pipe, or when the server's process ends (the pipe closes with it).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from types import TracebackType
from typing import Any

from stepwise.local.asl.errors import TaskError
from stepwise.local.lambda_runtime import DEFAULT_FUNCTION_ARN_PREFIX, UnknownFunctionError, lambda_json
from stepwise.local.template import SamTemplate
from stepwise.telemetry.spans import flush_spans

SERVICE_EXCEPTION = "Lambda.ServiceException"
# Each worker runs as many invocations at once as it is sent; the engine's execution slots bound them.
_WORKER_THREADS = 256
_STOP_SECONDS = 5.0


class _Worker:
    """One worker process, its pipe, and the invocations it has not answered yet."""

    def __init__(self, template_path: Path, module_prefix: str) -> None:
        ours, theirs = socket.socketpair()
        command = [sys.executable, "-m", "stepwise.local.lambda_workers", str(theirs.fileno()), str(template_path)]
        self.process = subprocess.Popen([*command, module_prefix], pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL)
        theirs.close()
        self.connection = Connection(ours.detach())
        self.pending: dict[int, Future[Any]] = {}
        self.lock = threading.Lock()
        self.alive = True
        self._reader = threading.Thread(target=self._read, name=f"lambda-worker-{self.process.pid}", daemon=True)
        self._reader.start()

    def send(self, request_id: int, future: Future[Any], request: bytes) -> None:
        with self.lock:
            if not self.alive:
                raise _lost(self.process)
            self.pending[request_id] = future
            try:
                self.connection.send_bytes(request)
            except OSError:
                self._lose()  # fails this invocation with the others

    def _read(self) -> None:
        while True:
            try:
                reply = json.loads(self.connection.recv_bytes())
            except (EOFError, OSError):
                with self.lock:
                    if self.alive:
                        self._lose()
                return
            with self.lock:
                future = self.pending.pop(reply["id"], None)
            if future is None:
                continue
            if "error" in reply:
                future.set_exception(TaskError(reply["error"], reply["cause"]))
            else:
                future.set_result(reply["result"])

    def _lose(self) -> None:
        """The worker is gone, or is let go (called with the lock held): every invocation it held fails."""
        self.alive = False
        # A shutdown, unlike a close, wakes the reader blocked on the socket and tells the worker at once.
        with contextlib.suppress(OSError):
            peer = socket.socket(fileno=os.dup(self.connection.fileno()))
            peer.shutdown(socket.SHUT_RDWR)
            peer.close()
        self.connection.close()
        try:
            self.process.wait(timeout=_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for future in self.pending.values():
            future.set_exception(_lost(self.process))
        self.pending.clear()

    def stop(self) -> None:
        with self.lock:
            if self.alive:
                self._lose()


def _lost(process: subprocess.Popen[bytes]) -> TaskError:
    message = f"The local Lambda worker (pid {process.pid}) exited (code {process.returncode}) during the invocation"
    cause = {"errorMessage": message, "errorType": SERVICE_EXCEPTION, "stackTrace": []}
    return TaskError(SERVICE_EXCEPTION, json.dumps(cause))


class LambdaWorkers:
    """Invokes the template's functions in `workers` processes; the `LambdaInvoker` of the local engine.

    An invocation goes to the worker with the fewest in flight. Start with `with` (or `start`); `stop`
    closes every worker's pipe and waits for it to exit (a worker's steps in flight are abandoned: call it
    once the engine has drained).
    """

    def __init__(
        self,
        template_path: Path,
        *,
        workers: int,
        module_prefix: str = "stepwise_worker_",
        function_arn_prefix: str = DEFAULT_FUNCTION_ARN_PREFIX,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.template_path = template_path
        self.functions = frozenset(SamTemplate.load(template_path).functions)
        self.function_arn_prefix = function_arn_prefix
        self._module_prefix = module_prefix
        self._size = workers
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        self._next_id = 0
        self._stopped = False

    @property
    def pids(self) -> list[int]:
        """The process ids of the workers now running."""
        with self._lock:
            return [worker.process.pid for worker in self._workers if worker.alive]

    def start(self) -> LambdaWorkers:
        """Start every worker (each imports a handler on its first invocation of it, as a cold start)."""
        with self._lock:
            while len(self._workers) < self._size:
                self._workers.append(_Worker(self.template_path, self._module_prefix))
        return self

    def __enter__(self) -> LambdaWorkers:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def __call__(self, function_name: str, payload: Any) -> Any:
        """Invoke by ARN (optionally with a `:qualifier`) or by logical id; what the handler returned."""
        logical_id = function_name.removeprefix(self.function_arn_prefix).split(":", 1)[0]
        if logical_id not in self.functions:
            raise UnknownFunctionError(function_name, list(self.functions))
        future: Future[Any] = Future()
        with self._lock:
            if self._stopped:
                raise TaskError(SERVICE_EXCEPTION, "The local Lambda workers are stopped")
            self._next_id += 1
            request_id = self._next_id
            worker = self._least_busy()
        try:
            request = json.dumps({"id": request_id, "function": logical_id, "event": payload}, default=lambda_json)
        except (TypeError, ValueError) as exc:
            raise TaskError("Lambda.InvalidRequestContentException", f"Could not parse request body: {exc}") from None
        worker.send(request_id, future, request.encode())
        return future.result()

    def _least_busy(self) -> _Worker:
        """The worker with the fewest invocations in flight (called with the lock held); a lost one is
        replaced first."""
        for index, worker in enumerate(self._workers):
            if not worker.alive:
                self._workers[index] = _Worker(self.template_path, self._module_prefix)
        return min(self._workers, key=lambda worker: len(worker.pending))

    def stop(self) -> None:
        """Close every worker's pipe and wait for it to exit; invocations after this fail."""
        with self._lock:
            self._stopped = True
            workers, self._workers = self._workers, []
        for worker in workers:
            worker.stop()


def _serve(invoker: Any, request: dict[str, Any]) -> bytes:
    """One invocation in the worker: the reply, with the result or the function error."""
    from stepwise.local.asl.lambda_integration import function_error

    try:
        result = invoker.invoke(request["function"], request["event"])
        reply = {"id": request["id"], "result": result}
    except Exception as exc:
        failure = function_error(exc)
        reply = {"id": request["id"], "error": failure.error, "cause": failure.cause}
    return json.dumps(reply).encode()


def worker_main(descriptor: int, template_path: Path, module_prefix: str) -> None:
    """A worker's life: read invocations from the pipe, run each on a thread, write its reply; exit at EOF."""
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop_signal, signal.SIG_IGN)
    # A worker's stdout is the server's, which carries no results: what handlers print (EMF metrics) is
    # diagnostics, written to stderr as the CLI writes it.
    sys.stdout = sys.stderr
    from stepwise.local.lambda_runtime import LocalLambdaInvoker

    connection = Connection(descriptor)
    invoker = LocalLambdaInvoker(SamTemplate.load(template_path), module_prefix=module_prefix)
    sending = threading.Lock()

    def answer(request: dict[str, Any]) -> None:
        reply = _serve(invoker, request)
        with sending:
            try:
                connection.send_bytes(reply)
            except OSError:
                os._exit(0)  # the server is gone

    pool = ThreadPoolExecutor(max_workers=_WORKER_THREADS, thread_name_prefix="invocation")
    while True:
        try:
            request = json.loads(connection.recv_bytes())
        except (EOFError, OSError):
            # The server closed the pipe (it stopped, or its process ended): nothing can take a reply. The
            # spans still buffered are exported first, as the exit handlers that would do it do not run.
            flush_spans()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        pool.submit(answer, request)


if __name__ == "__main__":
    worker_main(int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3])
