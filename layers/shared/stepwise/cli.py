"""The `stepwise` command: run the agent on this machine without AWS or Docker."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TextIO

from stepwise.errors import RunNotFound, StepwiseError, UsageError
from stepwise.local.defaults import DEMO_CONFIG, DEMO_QUESTION, PROJECT_ROOT, apply_local_defaults
from stepwise.local.whole_numbers import whole_number
from stepwise.models.run import RunLimits

# A shell's exit status for a process ended by SIGPIPE (128 + 13): what `stepwise demo | head` reports.
BROKEN_PIPE_EXIT = 141
# `stepwise run`'s exit status for a partial answer: a limit or a model error stopped the run after work was
# done (1 is a run without an answer, 2 a mistake in the call).
PARTIAL_EXIT = 3
RUN_EXIT_STATUSES = (
    "exit status: 0 when the model answered; 3 when a limit or a model error stopped the run and the answer is "
    "the best built from the work done (outcome partial); 1 when the run ended without an answer (FAILED); "
    "2 for a mistake in the call"
)


def run_exit_code(outcome: str | None) -> int:
    """`stepwise run`'s (and `demo`'s) exit status for a run's outcome: 0 only when the model answered."""
    if outcome == "answered":
        return 0
    return PARTIAL_EXIT if outcome == "partial" else 1


def _print_outcome(meta: Any, wall_seconds: float, out: TextIO, *, as_json: bool) -> int:
    from stepwise.steps.outcome import run_outcome

    meta = meta.model_copy(update={"outcome": run_outcome(meta)})
    if as_json:
        from stepwise.steps.api.run_views import run_view

        print(run_view(meta).model_dump_json(indent=2), file=out)
    else:
        from stepwise.inputs.display_text import visible

        usage = meta.usage
        print("", file=out)
        print(f"Answer: {visible(meta.answer or '(none)')}", file=out)
        print("", file=out)
        print(
            f"run_id {meta.run_id} · status {meta.status} · stop_reason {meta.stop_reason} · "
            f"iterations {meta.iteration} · outcome {meta.outcome}",
            file=out,
        )
        print(
            f"wall {wall_seconds * 1000:.0f} ms · model {usage.llm_ms} ms in {usage.llm_calls} call(s) · "
            f"tools {usage.tool_ms} ms in {usage.tool_calls} call(s) · tokens {usage.input_tokens} in / "
            f"{usage.output_tokens} out",
            file=out,
        )
        if meta.error:
            print(f"error: {meta.error.type}: {meta.error.message}", file=out)
    return run_exit_code(meta.outcome)


def _run_question(
    args: argparse.Namespace,
    config_dir: Path,
    config_file: str,
    out: TextIO,
    extra_environment: dict[str, str] | None = None,
) -> int:
    from stepwise.local.asl.results import StateEvent
    from stepwise.local.budget_prompt import BudgetPrompt
    from stepwise.local.environment import LocalEnvironment, check_question
    from stepwise.local.stop_signals import stop_on_signals
    from stepwise.local.store_options import store_endpoint
    from stepwise.local.trace_printer import LiveTracePrinter
    from stepwise.steps.api.problems import ApiError

    try:
        # refused before the store starts: an embedded one is a Java process, started for nothing
        check_question(args.question)
    except ApiError as exc:
        raise UsageError(exc.message) from None
    # the printer reads the runtime (store, profiles) of the environment created just below (bound when first called)
    printer = None if args.json else LiveTracePrinter(lambda: environment.runtime, out)
    # a run waiting at its budget (on_budget: ask) is answered on stdin: no other process holds its token
    prompt = BudgetPrompt(
        lambda: environment.runtime.store, lambda: environment.state_machine.task_tokens, sys.stdin, sys.stderr
    )

    def listener(event: StateEvent) -> None:
        if printer is not None:
            printer(event)
        prompt(event)

    with (
        stop_on_signals(f"stepwise {args.command}") as stop,
        store_endpoint(args) as endpoint_url,
        LocalEnvironment(
            config_dir=config_dir,
            config_file=config_file,
            project_root=PROJECT_ROOT,
            dynamodb_endpoint_url=endpoint_url,
            table_name=args.table_name,
            listener=listener,
            extra_environment=extra_environment,
        ) as environment,
    ):
        if stop.requested.is_set():
            return stop.exit_code(1)  # stopped while the store started: no run was created
        started = time.perf_counter()
        # the run's trace starts here, as a request to the API starts it (nothing is recorded unless tracing is on)
        with environment.runtime.spans.command(f"stepwise {args.command}"):
            try:
                meta = environment.accept_question(
                    args.question, profile=args.profile, max_iterations=args.max_iterations
                )
            except ApiError as exc:
                raise UsageError(exc.message) from None
            if not args.json:
                print(f"Question: {args.question}", file=out)
                print(f"run_id {meta.run_id} · profile {meta.profile}", file=out, flush=True)
            # a signal lets the step in flight finish, then the run ends CANCELLED (`stop_signals`)
            if not meta.is_terminal:  # a guardrail that blocked the input ended it as it was created
                environment.execute(meta.run_id, stop=stop.requested)
        final = environment.runtime.store.require_run(meta.run_id)
        return stop.exit_code(_print_outcome(final, time.perf_counter() - started, out, as_json=args.json))


def command_demo(args: argparse.Namespace, out: TextIO) -> int:
    """The whole loop on this machine: scripted model, example tool API, embedded DynamoDB, local engine."""
    from stepwise.local.example_api import ExampleToolApi

    if args.question.strip() and args.question != DEMO_QUESTION:
        # the demo's model plays one script whatever it is asked; say so before its answer puzzles anyone
        print(
            "stepwise demo: its model is scripted (config/demo-script.yaml) and plays one conversation whatever "
            f"the question: it answers {DEMO_QUESTION!r}. Ask a real model with `stepwise run QUESTION`.",
            file=sys.stderr,
            flush=True,
        )
    with ExampleToolApi() as api:
        if not args.json:
            print(
                "stepwise demo: scripted model · example tool API on "
                + api.url
                + " · embedded DynamoDB · statemachine/agent.asl.json in the local engine",
                file=out,
            )
        return _run_question(args, PROJECT_ROOT / "config", "demo.yaml", out, {"STEPWISE_EXAMPLE_API_URL": api.url})


def command_run(args: argparse.Namespace, out: TextIO) -> int:
    """One question through the configured model and tools."""
    from stepwise.config.loading import read_config_file
    from stepwise.config.model_reach import preflight, require

    config_path = Path(args.config).resolve()
    # checked before the store starts, so a model that cannot work is the first and only line: the profile
    # asked for, or (routed as the API routes) those a question may be routed to
    config = read_config_file(config_path).config
    require(preflight(config, profiles=[args.profile], routed=args.profile is None), "run")
    return _run_question(args, config_path.parent, config_path.name, out)


def read_event(path: Path) -> Any:
    """The JSON event in `path`; `UsageError` naming the file when it is missing or not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read the event file {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise UsageError(f"the event file {path} is not JSON: {exc}") from None


def iteration_limit(text: str) -> int:
    """`--max-iterations`: a whole number within the run limits' bounds."""
    bounds = RunLimits.model_fields["max_iterations"].metadata
    low = next(bound.ge for bound in bounds if hasattr(bound, "ge"))
    high = next(bound.le for bound in bounds if hasattr(bound, "le"))
    return whole_number(low, high)(text)


class _CurrentStderr:
    """Writes to whatever `sys.stderr` is at the time (a caller may replace it, as test capture does)."""

    def write(self, text: str) -> int:
        """Write `text` to the current stderr."""
        return sys.stderr.write(text)

    def flush(self) -> None:
        """Flush the current stderr."""
        sys.stderr.flush()


def logs_to_stderr() -> None:
    """Send the service's log lines to stderr, so stdout holds only results (`stepwise run --json | jq`)."""
    import logging

    from stepwise.telemetry.observability import SERVICE

    for handler in logging.getLogger(SERVICE).handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler.stream, _CurrentStderr):
            handler.setStream(_CurrentStderr())


@contextmanager
def stdout_kept_for_results() -> Iterator[None]:
    """While a command runs, whatever writes to `sys.stdout` (Powertools' EMF metrics, which it `print`s, an
    OpenTelemetry console exporter) writes to stderr instead; the command's results go to the stream it was
    given, so `stepwise run … --json | jq` reads nothing else."""
    saved = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stdout = saved


def _with_data_dir(args: argparse.Namespace, data_dir: Path) -> argparse.Namespace:
    """`args` with the embedded store kept in `data_dir` (an explicit `--dynamodb-endpoint` still wins)."""
    return argparse.Namespace(**{**vars(args), "data_dir": data_dir})


def command_invoke(args: argparse.Namespace, out: TextIO) -> int:
    """One function of template.yaml on one event, in-process, as `sam local invoke` does in Docker.

    The local Step Functions endpoint is up too, so the API function can start the run it accepts; the
    command returns once that run has ended.
    """
    from stepwise.local.event_seed import seed_for_event
    from stepwise.local.server import LocalApi

    event = read_event(Path(args.event))
    config_path = Path(args.config).resolve()
    from stepwise.local.store_options import store_endpoint

    with (
        # seeded state goes to a throwaway embedded store, so the event's fixed run_id never meets a stored run
        tempfile.TemporaryDirectory(prefix="stepwise-seed-") as seed_dir,
        store_endpoint(
            _with_data_dir(args, Path(seed_dir)) if args.seed_run else args, shared=not args.seed_run
        ) as endpoint_url,
        LocalApi(
            config_dir=config_path.parent,
            config_file=config_path.name,
            demo=config_path == DEMO_CONFIG,
            dynamodb_endpoint_url=endpoint_url,
            table_name=args.table_name,
            # one function on one event: the runs left open in a shared store are not this command's to resume
            resume_open_runs=False,
        ) as local,
    ):
        try:
            if args.seed_run:
                seed_for_event(args.logical_id, event, local.environment)
            result = local.environment.invoke(args.logical_id, event)
        except Exception as exc:
            print(json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc)}), file=out)
            if isinstance(exc, RunNotFound) and not args.seed_run:
                print("stepwise: a step event needs its run stored; --seed-run builds it first", file=sys.stderr)
            return 1
        print(json.dumps(result, indent=2, ensure_ascii=False), file=out)
        return 0


class _OneLineErrors(argparse.ArgumentParser):
    """argparse, but a mistake is one line (what is wrong, and where help is), not the usage block."""

    def error(self, message: str) -> NoReturn:
        """Print the mistake in one line on stderr and exit 2."""
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


# The commands whose code is light: for one of them, the modules of the others (the HTTP front, config check,
# eval, replay: 0.3 s of CPU to import) are not loaded, so a warm `stepwise run` reaches its first step sooner.
_LIGHT_COMMANDS = frozenset({"demo", "run", "invoke", "store"})


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The command-line interface; when `argv` names a light command, the other commands are left out."""
    parser = _OneLineErrors(prog="stepwise", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    from stepwise.local.store_options import add_store_arguments  # deferred, like add_serve_command

    demo = commands.add_parser(
        "demo", help="run the demo: scripted model, example tools, local engine", epilog=RUN_EXIT_STATUSES
    )
    demo.add_argument("question", nargs="?", default=DEMO_QUESTION)
    demo.add_argument("--profile", default=None)
    demo.add_argument("--max-iterations", type=iteration_limit, default=None)
    demo.add_argument("--json", action="store_true", help="print the stored run as JSON instead of a trace")
    add_store_arguments(demo)
    demo.set_defaults(handler=command_demo)

    run = commands.add_parser(
        "run", help="ask a question with the configured model and tools", epilog=RUN_EXIT_STATUSES
    )
    run.add_argument("question")
    run.add_argument("--config", default=str(PROJECT_ROOT / "config" / "stepwise.yaml"))
    run.add_argument("--profile", default=None)
    run.add_argument("--max-iterations", type=iteration_limit, default=None)
    run.add_argument("--json", action="store_true")
    add_store_arguments(run)
    run.set_defaults(handler=command_run)

    invoke = commands.add_parser("invoke", help="invoke one function of template.yaml on one event")
    invoke.add_argument("logical_id", help="the function's logical id in template.yaml, e.g. ParseFunction")
    invoke.add_argument("-e", "--event", required=True, help="a JSON event file, e.g. events/parse.json")
    invoke.add_argument("--config", default=str(DEMO_CONFIG))
    invoke.add_argument(
        "--seed-run",
        action="store_true",
        help="first build what the event's step expects: the run its run_id names and the steps before it",
    )
    add_store_arguments(invoke)
    invoke.set_defaults(handler=command_invoke)
    if next((word for word in argv if not word.startswith("-")), None) not in _LIGHT_COMMANDS:
        _add_other_commands(commands)
    from stepwise.local.store_command import add_store_command

    add_store_command(commands)
    return parser


def _add_other_commands(commands: Any) -> None:
    from stepwise.local.server import add_serve_command  # deferred: imported after the local defaults are set

    add_serve_command(commands)
    from stepwise.config.check import add_config_command  # deferred, like add_serve_command

    add_config_command(commands)
    from stepwise.local.eval_command import add_eval_command  # deferred, like add_serve_command
    from stepwise.local.replay_command import add_replay_command

    add_eval_command(commands)
    add_replay_command(commands)


def main(argv: list[str] | None = None, out: TextIO = sys.stdout) -> int:
    """Entry point of the `stepwise` command; exit code 0 only for an answered run or a succeeded invocation."""
    apply_local_defaults()
    logs_to_stderr()
    args = build_parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
    try:
        with stdout_kept_for_results():
            code: int = args.handler(args, out)
    except UsageError as exc:
        print(f"stepwise: {exc}", file=sys.stderr)
        return 2
    except StepwiseError as exc:
        print(f"stepwise: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # stdout's reader went away (`stepwise demo | head`): stop quietly. stdout then points at /dev/null
        # so the interpreter's last flush of it does not fail again on exit (as Python's signal docs advise).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE_EXIT
    return code


if __name__ == "__main__":
    sys.exit(main())
